//! HTTP's own flags on `throng run` (`clap` feature): `-m`, `--http2`, `--no-keepalive`,
//! `--stream` and the LLM workload's (`--llm`, `--model`, `--prompts`, `--prompt-tokens`,
//! `--max-tokens`),
//! and the URL run they make with the shared request flags: `throng run http://…` as a
//! one-step plan, its templated parts (`{{ seq() }}` in the path, a header or the body) rendered
//! per call and the rest prepared once.

use std::sync::Arc;

use clap::Args;
use throng_core::flags::{
    FlagsError, ProtocolFlags, Request, UrlArgs, UrlRun, BODY, HEADER, STREAMS,
};
use throng_core::step::{ClientOptions, Render, StaticOnly};
use throng_core::steps::Steps;
use throng_core::RunPlan;
use throng_h2::pool;
use throng_template::Calls;

use crate::{HttpClient, HttpConfig, HttpOptions, PerCall, StreamMode};
use throng_llm::{generated_prompts, read_prompts_file, Api, RequestSpec};
use throng_stream::Framing;

/// HTTP's testbed server, `throng serve llm`: throng-llm's OpenAI-compatible streaming server
/// with programmed timing, the target `--stream` and `--llm` are tested against.
pub use throng_llm::serve::ServeArgs as LlmServe;

fn input(m: impl Into<String>) -> FlagsError {
    FlagsError::Input(m.into())
}

/// HTTP's flags of `throng run`.
#[derive(Debug, Clone, Args)]
pub struct HttpFlags {
    /// HTTP method.
    #[arg(short = 'm', long, default_value = "GET", help_heading = "Request")]
    pub method: String,
    /// Speak HTTP/2 (h2c prior knowledge over http://, ALPN h2 over https://). A/B sides:
    /// --http2=SIDE[,SIDE...] names the sides that speak it, the others HTTP/1.1 (one HTTP
    /// side: --http2 alone).
    #[arg(
        long,
        value_name = "SIDE",
        num_args = 0..=1,
        require_equals = true,
        value_delimiter = ',',
        help_heading = "Request"
    )]
    pub http2: Option<Vec<String>>,
    /// A new connection for every request, each timing its connect and TLS phases (HTTP/1.1
    /// sends `Connection: close`; HTTP/2 opens one for the request alone), as oha's
    /// --disable-keepalive and k6's noConnectionReuse.
    #[arg(long, visible_alias = "disable-keepalive", help_heading = "Request")]
    pub no_keepalive: bool,
    /// Read each response as a stream of events (server-sent events, NDJSON lines or the
    /// body's chunks as they arrive), each timed from the one before, the first from the
    /// request's intended start, in the row `LABEL (events)`; a stream cut off after an event
    /// fails as `cut`. Over HTTP/1.1 and HTTP/2.
    #[arg(long, value_name = "sse|ndjson|chunks", help_heading = "Request")]
    pub stream: Option<Framing>,
    /// Send OpenAI-compatible streaming requests (chat by default, or the legacy completions)
    /// to the URL (its path, or /v1/chat/completions or /v1/completions when it has none):
    /// POST, JSON bodies built from --prompts or generated prompts, one a call in turn, each
    /// answer read as server-sent events whose content chunks are the row `LABEL (tokens)`:
    /// the first from the request's intended start (time to first token), then each gap
    /// between tokens.
    #[arg(
        long,
        value_name = "chat|completions",
        num_args = 0..=1,
        default_missing_value = "chat",
        help_heading = "LLM serving"
    )]
    pub llm: Option<Api>,
    /// --llm: the model the requests name (the server's name for it).
    #[arg(long, value_name = "NAME", help_heading = "LLM serving")]
    pub model: Option<String>,
    /// --llm: prompts from a JSON Lines file, a line each with `prompt` (or chat `messages`)
    /// and optionally its own `max_tokens`; sent in turn.
    #[arg(long, value_name = "FILE.jsonl", help_heading = "LLM serving")]
    pub prompts: Option<std::path::PathBuf>,
    /// --llm: generated prompts of N one-token words each (100 different ones, sent in turn);
    /// the default without --prompts is 128.
    #[arg(long, value_name = "N", help_heading = "LLM serving")]
    pub prompt_tokens: Option<usize>,
    /// --llm: `max_tokens` of every request (a prompt's own wins); none lets the server decide.
    #[arg(long, value_name = "N", help_heading = "LLM serving")]
    pub max_tokens: Option<u32>,
    /// `--streams` was given for other sides of an A/B run, which speak HTTP/2: this one's
    /// HTTP/1.1 is no mistake.
    #[arg(skip)]
    streams_elsewhere: bool,
}

impl Default for HttpFlags {
    fn default() -> Self {
        HttpFlags {
            method: "GET".into(),
            http2: None,
            no_keepalive: false,
            stream: None,
            llm: None,
            model: None,
            prompts: None,
            prompt_tokens: None,
            max_tokens: None,
            streams_elsewhere: false,
        }
    }
}

/// `throng run http://…`'s one-step plan: its templated parts rendered per call, if any.
pub type UrlDriver = Steps<HttpClient, Arc<dyn Render + Send + Sync>>;

impl HttpFlags {
    /// Whether HTTP/2 is spoken: `--http2` given (for an A/B run, [`ProtocolFlags::for_side`]
    /// keeps it for the sides it names only).
    pub fn speaks_http2(&self) -> bool {
        self.http2.is_some()
    }

    /// The sides `--http2=SIDE,...` names that no [`ProtocolFlags::for_side`] took as its own:
    /// refused, since a run of no such side cannot tell whether to speak HTTP/2.
    fn unplaced(&self) -> Result<(), FlagsError> {
        match &self.http2 {
            Some(names) if !names.is_empty() => Err(input(format!(
                "--http2={}: names sides of an A/B run (--target SIDE=URL), and this run has no \
                 side of that name; --http2 alone speaks HTTP/2 to every HTTP target",
                names.join(",")
            ))),
            _ => Ok(()),
        }
    }

    /// The transport of `request` and these flags on a target's configuration: HTTP/2,
    /// keep-alive, timeouts, TLS trust.
    pub fn transport(&self, request: &Request, http: &mut HttpConfig) -> Result<(), FlagsError> {
        http.http2 = self.speaks_http2();
        http.streams = request.streams()?;
        http.keepalive = !self.no_keepalive;
        http.timeout = request.timeout()?;
        http.connect_timeout = request.connect_timeout()?;
        http.insecure = request.insecure;
        http.cacert = request.cacert.clone();
        http.identity = request.identity()?;
        Ok(())
    }

    /// The configuration of a run of `url` with `request`, and the parts that are templates
    /// (compiled into `calls`), every bad value named with its flag.
    pub fn config(
        &self,
        url: &str,
        request: &Request,
        calls: &mut Calls,
    ) -> Result<(HttpConfig, PerCall), FlagsError> {
        let mut per_call = PerCall::default();
        let with_path;
        let url = match self.llm {
            Some(api) if split_path(url).is_none_or(|(_, p)| p == "/") => {
                with_path = format!("{}{}", url.trim_end_matches('/'), api.path());
                with_path.as_str()
            }
            _ => url,
        };
        // A templated path is no URI yet: the configuration gets `/`, the step the template.
        let (base, path) = match split_path(url) {
            Some((base, path)) if is_template(path) => {
                let text = calls
                    .compile(path)
                    .map_err(|e| input(format!("{url}: the path's template: {e}")))?;
                per_call.path = Some(text);
                (format!("{base}/"), Some(path))
            }
            _ => (url.to_string(), None),
        };
        let mut http = HttpConfig::new(&base).map_err(|e| input(e.to_string()))?;
        http.method = self
            .method
            .to_uppercase()
            .parse()
            .map_err(|_| input(format!("-m/--method {:?}: not an HTTP method", self.method)))?;
        for h in &request.headers {
            match h.split_once(':') {
                Some((name, value)) if is_template(value) => {
                    let name = name.trim().parse().map_err(|_| {
                        input(format!("-H {h:?}: `{}` is not a header name", name.trim()))
                    })?;
                    let text = calls
                        .compile(value.trim())
                        .map_err(|e| input(format!("-H {h:?}: {e}")))?;
                    per_call.headers.push((name, text));
                }
                _ => http.header(h).map_err(|e| input(format!("-H {e}")))?,
            }
        }
        if let Some(body) = request.body()? {
            // Bytes that are not text (a file's) are sent as they are.
            if let Ok(text) = std::str::from_utf8(&body) {
                if is_template(text) {
                    let t = calls
                        .compile(text)
                        .map_err(|e| input(format!("-d/--body's template: {e}")))?;
                    per_call.body = Some(t);
                }
            }
            http.body = body.into();
        }
        self.transport(request, &mut http)?;
        let refused =
            throng_core::flags::tls_refusal(request.cacert.is_some(), http.identity.is_some());
        if let (Some(flags), false) = (refused, http.is_tls()) {
            return Err(input(format!(
                "{flags} https:// targets; {url} is plain http"
            )));
        }
        self.llm_requests(request, &mut http, &mut per_call)?;
        if let Some(framing) = self.stream {
            http.stream = Some(StreamMode::Events(framing));
        }
        http.label = request.label.clone();
        if let (None, Some(path)) = (&request.label, path) {
            http.label = Some(format!("{} {}", http.method, path));
        }
        Ok((http, per_call))
    }

    /// `--llm`: POST, JSON, the bodies of the prompts in turn, the answer read as an
    /// OpenAI-compatible stream; the LLM flags refused without it.
    fn llm_requests(
        &self,
        request: &Request,
        http: &mut HttpConfig,
        per_call: &mut PerCall,
    ) -> Result<(), FlagsError> {
        let Some(api) = self.llm else {
            let given = [
                (self.model.is_some(), "--model"),
                (self.prompts.is_some(), "--prompts"),
                (self.prompt_tokens.is_some(), "--prompt-tokens"),
                (self.max_tokens.is_some(), "--max-tokens"),
            ];
            return match given.iter().find(|(given, _)| *given) {
                Some((_, flag)) => Err(input(format!(
                    "{flag} is for --llm's requests: give --llm too"
                ))),
                None => Ok(()),
            };
        };
        let refuse = |m: &str| Err(input(format!("--llm: {m}")));
        if self.stream.is_some() {
            return refuse("answers are read as server-sent events already: drop --stream");
        }
        if !matches!(http.method, http::Method::GET | http::Method::POST) {
            return refuse("requests are POSTs: drop -m");
        }
        if request.body()?.is_some() {
            return refuse(
                "the bodies are built from the prompts: give --prompts FILE.jsonl, not -d",
            );
        }
        let Some(model) = &self.model else {
            return refuse("give --model NAME, the model the server serves");
        };
        let prompts = match (&self.prompts, self.prompt_tokens) {
            (Some(_), Some(_)) => return refuse("give --prompts or --prompt-tokens, not both"),
            (Some(file), None) => {
                read_prompts_file(file, api).map_err(|e| input(format!("--prompts: {e}")))?
            }
            (None, Some(0)) => return refuse("--prompt-tokens is at least 1"),
            (None, tokens) => generated_prompts(100, tokens.unwrap_or(128), 0),
        };
        if self.max_tokens == Some(0) {
            return refuse("--max-tokens is at least 1");
        }
        let mut spec = RequestSpec::new(api, model.clone());
        spec.max_tokens = self.max_tokens;
        per_call.bodies = spec.bodies(&prompts);
        http.method = http::Method::POST;
        if !http.headers.contains_key(http::header::CONTENT_TYPE) {
            http.headers.insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
        }
        http.stream = Some(StreamMode::Llm(api));
        Ok(())
    }

    /// The one-step plan of a run of `url`, and the connections it opens at most under `plan`.
    pub fn url_driver(
        &self,
        url: &str,
        request: &Request,
        plan: &RunPlan,
    ) -> Result<(UrlDriver, u64), FlagsError> {
        let mut calls = Calls::default();
        let (http, per_call) = self.config(url, request, &mut calls)?;
        let connections = match http.http2 {
            true => plan.peak_concurrency().div_ceil(http.streams as u64),
            false => plan.peak_concurrency(),
        };
        let bad = |e: crate::HttpConfigError| input(e.to_string());
        let templated = per_call.path.is_some() || per_call.body.is_some();
        // Only a request with templates pays for rendering; the rest is prepared once for the
        // run.
        let driver = match templated || !per_call.headers.is_empty() || !per_call.bodies.is_empty()
        {
            false => HttpClient::one_step(http)
                .map_err(bad)?
                .rendered_by(Arc::new(StaticOnly) as Arc<dyn Render + Send + Sync>),
            true => HttpClient::one_step_per_call(
                http,
                per_call,
                Arc::new(calls) as Arc<dyn Render + Send + Sync>,
            )
            .map_err(bad)?,
        };
        Ok((driver, connections))
    }
}

fn is_template(s: &str) -> bool {
    s.contains("{{") || s.contains("{%")
}

/// A URL split before its path (`http://host:8080`, `/a/b?c`), if it has one.
fn split_path(url: &str) -> Option<(&str, &str)> {
    let after = url.find("://")? + 3;
    let slash = after + url[after..].find('/')?;
    Some(url.split_at(slash))
}

impl ProtocolFlags for HttpFlags {
    type Driver = UrlDriver;

    fn given(&self) -> Vec<&'static str> {
        let mut given = Vec::new();
        if !self.method.eq_ignore_ascii_case("GET") {
            given.push("-m/--method");
        }
        if self.speaks_http2() {
            given.push("--http2");
        }
        if self.no_keepalive {
            given.push("--no-keepalive");
        }
        if self.stream.is_some() {
            given.push("--stream");
        }
        for (is, flag) in [
            (self.llm.is_some(), "--llm"),
            (self.model.is_some(), "--model"),
            (self.prompts.is_some(), "--prompts"),
            (self.prompt_tokens.is_some(), "--prompt-tokens"),
            (self.max_tokens.is_some(), "--max-tokens"),
        ] {
            if is {
                given.push(flag);
            }
        }
        given
    }

    fn clear(&mut self) {
        *self = HttpFlags::default();
    }

    fn reads(&self) -> &'static [throng_core::flags::Shared] {
        &[HEADER, BODY, STREAMS]
    }

    fn check_url(&self, request: &Request) -> Result<(), FlagsError> {
        self.unplaced()?;
        // HTTP/1.1 opens a connection per user: only HTTP/2 shares one among --streams users.
        if request.streams.is_some() && !self.speaks_http2() && !self.streams_elsewhere {
            return Err(input(
                "--streams is how many users share an HTTP/2 connection: give --http2 too \
                 (HTTP/1.1 opens a connection per user: -c)",
            ));
        }
        Ok(())
    }

    fn check_offline(
        &self,
        url: &str,
        request: &Request,
        plan: &RunPlan,
    ) -> Result<(), FlagsError> {
        self.check_url(request)?;
        self.url_driver(url, request, plan).map(|_| ())
    }

    fn for_side(&mut self, pick: &dyn Fn(&[String]) -> Vec<String>) {
        let Some(names) = self.http2.as_ref().filter(|n| !n.is_empty()) else {
            return;
        };
        // As `SIDE=on` entries: `on` when this side is named, nothing for another side, the
        // entry whole for a name that is no side (kept, for check_url to refuse).
        let entries: Vec<String> = names.iter().map(|n| format!("{n}=on")).collect();
        let kept = pick(&entries);
        let unknown: Vec<String> = kept
            .iter()
            .filter_map(|e| e.strip_suffix("=on").map(str::to_string))
            .collect();
        self.http2 = match (kept.iter().any(|e| e == "on"), unknown.is_empty()) {
            (_, false) => Some(unknown),
            (true, true) => Some(Vec::new()),
            (false, true) => None,
        };
        self.streams_elsewhere = self.http2.is_none();
    }

    fn check_sides(&self, own: &[&str], others: &[&str]) -> Result<(), FlagsError> {
        match &self.http2 {
            None => Ok(()),
            Some(names) if names.is_empty() && own.len() > 1 => Err(input(format!(
                "--http2 with the HTTP sides {}: name those that speak HTTP/2 as --http2={} (the \
                 others speak HTTP/1.1), or --http2={} for every one",
                own.join(", "),
                own[own.len() - 1],
                own.join(",")
            ))),
            Some(names) => match names.iter().find(|n| !own.contains(&n.as_str())) {
                Some(n) if others.contains(&n.as_str()) => Err(input(format!(
                    "--http2={n}: side {n} is not an HTTP side (http://, https://)"
                ))),
                Some(n) => Err(input(format!(
                    "--http2={n}: no side is named {n} (the HTTP sides are {})",
                    own.join(", ")
                ))),
                None => Ok(()),
            },
        }
    }

    fn takes_body(&self) -> bool {
        // A GET's body is no request of its own: with a gRPC side, `-d` is the call's message.
        !self.method.eq_ignore_ascii_case("GET")
    }

    fn scenario_options(
        &self,
        options: ClientOptions,
        _targets: usize,
        _source: &str,
    ) -> Result<ClientOptions, FlagsError> {
        if !self.method.eq_ignore_ascii_case("GET") {
            return Err(input(
                "-m, -d and --label do not apply to a scenario file: its steps say what they send",
            ));
        }
        if self.stream.is_some() || self.llm.is_some() {
            return Err(input(
                "--stream and --llm do not apply to a scenario file: a request step says `stream: sse` \
                 (or ndjson, chunks)",
            ));
        }
        self.unplaced()?;
        // Every header must be one HTTP can send, whichever targets the file has.
        let mut probe = HttpConfig::new("http://127.0.0.1/").map_err(|e| input(e.to_string()))?;
        for (name, value) in &options.headers {
            probe
                .header(&format!("{name}: {value}"))
                .map_err(|e| input(format!("-H {e}")))?;
        }
        Ok(options.with(HttpOptions {
            http2: self.speaks_http2(),
            keepalive: !self.no_keepalive,
        }))
    }

    async fn url_run(&self, args: UrlArgs<'_>) -> Result<UrlRun<Self::Driver>, FlagsError> {
        let mut plan = args.plan?;
        let (driver, connections) = self.url_driver(args.url, args.request, &plan)?;
        // HTTP/2's connections are each worker's own: no more workers than connections.
        if self.speaks_http2() && !self.no_keepalive {
            let shared = pool::connections_for(&plan, args.request.streams()?);
            pool::fit_threads(&mut plan, shared);
        }
        Ok(UrlRun {
            plan,
            driver,
            connections,
        })
    }
}
