//! Text that may hold `{{ templates }}`: compiled once when a scenario loads (or a URL's run is
//! made); a string without `{{` or `{%` is kept as it is and never rendered. Its own crate so
//! that minijinja is one dependency set: the scenario crate compiles files with it, and the
//! protocols' flags compile a URL's per-call templates ([`Calls`]) without depending on the
//! scenario crate.
#![deny(missing_docs)]

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use minijinja::{Environment, UndefinedBehavior, Value};
use rand::Rng;

/// Variables every template of a scenario may use besides its own.
pub const BUILTINS: &[&str] = &["user", "iteration"];

/// Functions every template may call (the first three are ours, the rest minijinja's).
pub const FUNCTIONS: &[&str] = &[
    "seq",
    "uuid",
    "rand_int",
    "range",
    "dict",
    "namespace",
    "debug",
    "lipsum",
    "cycler",
    "joiner",
];

pub use throng_core::step::Text;

/// The template environment of one scenario.
pub struct Templates {
    env: Environment<'static>,
    next: usize,
}

impl std::fmt::Debug for Templates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Templates")
            .field("count", &self.next)
            .finish()
    }
}

fn uuid() -> String {
    let b: [u8; 16] = rand::rng().random();
    let hex: String = b
        .iter()
        .enumerate()
        .map(|(i, x)| match i {
            6 => format!("{:02x}", (x & 0x0f) | 0x40),
            8 => format!("{:02x}", (x & 0x3f) | 0x80),
            _ => format!("{x:02x}"),
        })
        .collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

fn rand_int(a: i64, b: i64) -> i64 {
    if b <= a {
        a
    } else {
        rand::rng().random_range(a..=b)
    }
}

impl Default for Templates {
    fn default() -> Self {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.add_function("uuid", uuid);
        env.add_function("rand_int", rand_int);
        // One count for the whole run (every user and worker): ghz's `{{.RequestNumber}}`.
        let seq = Arc::new(AtomicU64::new(0));
        env.add_function("seq", move || seq.fetch_add(1, Ordering::Relaxed));
        Templates { env, next: 0 }
    }
}

impl Templates {
    /// Compiles `source` if it holds a template; returns the variables it uses.
    pub fn compile(&mut self, source: &str) -> Result<(Text, HashSet<String>), String> {
        if !source.contains("{{") && !source.contains("{%") {
            return Ok((Text::Static(source.to_string()), HashSet::new()));
        }
        let name = format!("t{}", self.next);
        self.next += 1;
        self.env
            .add_template_owned(name.clone(), source.to_string())
            .map_err(|e| describe(&e))?;
        let t = self.env.get_template(&name).map_err(|e| describe(&e))?;
        let used = t.undeclared_variables(false);
        Ok((Text::Template(name), used))
    }

    /// Renders a text with the given variables.
    pub fn render(&self, text: &Text, vars: &Value) -> Result<String, String> {
        match text {
            Text::Static(s) => Ok(s.clone()),
            Text::Template(name) => {
                let t = self.env.get_template(name).map_err(|e| describe(&e))?;
                t.render(vars).map_err(|e| describe(&e))
            }
        }
    }
}

/// The variables of a render: the session's, plus `user` and `iteration`.
pub fn context(vars: &BTreeMap<String, serde_json::Value>, user: u64, iteration: u64) -> Value {
    let mut map: BTreeMap<String, Value> = vars
        .iter()
        .map(|(k, v)| (k.clone(), Value::from_serialize(v)))
        .collect();
    map.insert("user".into(), Value::from(user));
    map.insert("iteration".into(), Value::from(iteration));
    Value::from(map)
}

/// Renders templates that use no variable, only functions (`seq()`, `uuid()`, `rand_int(a, b)`):
/// `throng run URL`'s per-call templates in `-d`, `-H` and the path.
#[derive(Debug)]
pub struct Calls {
    templates: Templates,
    empty: Value,
}

impl Calls {
    /// Compiles `source`; a template that names a variable is refused (a URL's run has none),
    /// and so is one that does not compile.
    pub fn compile(&mut self, source: &str) -> Result<Text, String> {
        let (text, used) = self.templates.compile(source)?;
        let mut unknown: Vec<&String> = used
            .iter()
            .filter(|u| !FUNCTIONS.contains(&u.as_str()))
            .collect();
        unknown.sort();
        match unknown.first() {
            None => Ok(text),
            Some(name) => Err(format!(
                "`{name}` is not known here: a URL's templates may call {}",
                FUNCTIONS[..3].join("(), ") + "()"
            )),
        }
    }
}

impl Default for Calls {
    fn default() -> Self {
        Calls {
            templates: Templates::default(),
            empty: Value::from(BTreeMap::<String, Value>::new()),
        }
    }
}

impl throng_core::step::Render for Calls {
    fn render(&self, text: &Text) -> Result<String, String> {
        self.templates.render(text, &self.empty)
    }
}

fn describe(e: &minijinja::Error) -> String {
    match e.detail() {
        Some(d) => format!("{}: {d}", e.kind()),
        None => e.kind().to_string(),
    }
}

/// Shared, read-only templates.
pub type SharedTemplates = Arc<Templates>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_text_is_never_a_template() {
        let mut t = Templates::default();
        let (text, used) = t.compile("/plain/path").unwrap();
        assert!(matches!(text, Text::Static(ref s) if s == "/plain/path"));
        assert!(used.is_empty());
    }

    #[test]
    fn renders_variables_and_helpers() {
        let mut t = Templates::default();
        let (text, used) = t
            .compile("/client/{{ a }}/{{ user }}-{{ iteration }}/{{ rand_int(5, 5) }}")
            .unwrap();
        assert!(used.contains("a") && used.contains("user"));
        let mut vars = BTreeMap::new();
        vars.insert("a".to_string(), serde_json::json!(17));
        assert_eq!(
            t.render(&text, &context(&vars, 3, 9)).unwrap(),
            "/client/17/3-9/5"
        );
        let (u, _) = t.compile("{{ uuid() }}").unwrap();
        let id = t.render(&u, &context(&vars, 0, 0)).unwrap();
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4");
    }

    #[test]
    fn seq_counts_every_call_of_the_run_and_calls_take_no_variables() {
        use throng_core::step::Render;
        let mut c = Calls::default();
        let t = c
            .compile(r#"{"n": {{ seq() }}, "m": {{ seq() }}}"#)
            .unwrap();
        assert_eq!(c.render(&t).unwrap(), r#"{"n": 0, "m": 1}"#);
        assert_eq!(c.render(&t).unwrap(), r#"{"n": 2, "m": 3}"#);
        let r = c.compile("/x/{{ rand_int(7, 7) }}").unwrap();
        assert_eq!(c.render(&r).unwrap(), "/x/7");
        assert!(matches!(c.compile("/plain").unwrap(), Text::Static(_)));
        let e = c.compile("/x/{{ user }}").unwrap_err();
        assert!(e.contains("`user` is not known here"), "{e}");
        assert!(e.contains("seq(), uuid(), rand_int()"), "{e}");
        assert!(c.compile("{{ seq( }}").is_err());
    }

    #[test]
    fn undefined_variables_fail_at_render() {
        let mut t = Templates::default();
        let (text, _) = t.compile("{{ missing }}").unwrap();
        assert!(t.render(&text, &context(&BTreeMap::new(), 0, 0)).is_err());
        assert!(t.compile("{{ unclosed").is_err());
    }
}
