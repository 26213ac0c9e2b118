//! The command line against its own documentation: every command the README and `--help`
//! show parses, and the runs validate.

/// Every `throng ...` command in the code blocks of the README and the book parses; the `run`
/// ones also validate (those that read no file), so neither can drift from the flags. A block
/// of shell (no language, `sh`, `bash`, `console`) holds commands; `text`, `yaml` and the
/// others do not (a usage line, output).
#[test]
fn readme_examples_parse() {
    use clap::error::ErrorKind::{DisplayHelp, DisplayVersion};
    use clap::{CommandFactory, Parser};
    use throng_cli::scenario;
    let mut commands = Vec::new();
    for (path, text) in super::book::pages() {
        let place = path
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap_or(&path)
            .display()
            .to_string();
        for line in commands_in(&text) {
            commands.push((place.clone(), line));
        }
    }
    // And `throng run --help`'s examples, as printed.
    let help = super::Cli::command()
        .find_subcommand("run")
        .and_then(|c| c.get_after_help().map(|h| h.to_string()))
        .unwrap();
    commands.extend(
        help.lines()
            .map(|l| ("--help".to_string(), l.trim().to_string())),
    );
    let mut checked = (0, 0, 0);
    for (place, line) in commands {
        if !line.starts_with("throng ") || line.contains("...") {
            continue;
        }
        let cmd = line.split(" #").next().unwrap().trim();
        // What follows a `&`, `&&`, pipe or redirection is another program's.
        let cmd = [" &", " |", " >"]
            .iter()
            .fold(cmd, |c, sep| c.split(sep).next().unwrap_or(c));
        let words = shell_words(cmd);
        // A side's own flags are read after the command's, from the command line as given.
        super::grid::COMMAND_LINE.with(|c| *c.borrow_mut() = Some(words[1..].to_vec()));
        let cli = match super::Cli::try_parse_from(&words) {
            Ok(cli) => cli,
            // `throng --version`, `throng run --help`: they parse, and print.
            Err(e) if matches!(e.kind(), DisplayHelp | DisplayVersion) => continue,
            Err(e) => panic!("{place}: {cmd}: {e}"),
        };
        if let super::args::Command::Run(mut run) = cli.command {
            if scenario::is_scenario(&run.url) {
                // With A/B sides the file's target is replaced by each side's (the grid checks
                // that); each --with file is a plan of its own.
                let sides =
                    super::grid::sides(&run).unwrap_or_else(|e| panic!("{place}: {cmd}: {e}"));
                if sides.is_none() {
                    scenario::build_scenario(&run)
                        .unwrap_or_else(|e| panic!("{place}: {cmd}: {e}"));
                }
                for file in &run.with {
                    let mut w = run.clone();
                    (w.url, w.with) = (file.clone(), Vec::new());
                    scenario::build_scenario(&w).unwrap_or_else(|e| panic!("{place}: {cmd}: {e}"));
                }
            } else {
                // A/B sides: the flags that name sides (`--http2=SIDE`) are checked against
                // them, and the request below as that of a side they do not name.
                let sides =
                    super::grid::sides(&run).unwrap_or_else(|e| panic!("{place}: {cmd}: {e}"));
                if let Some(sides) = sides {
                    super::runner::check_sides(&run, &sides)
                        .unwrap_or_else(|e| panic!("{place}: {cmd}: {e}"));
                    for p in run.protocols.all_mut() {
                        p.for_side(&|_| Vec::new());
                    }
                }
                // The load flags always validate as printed (an example without an end used to
                // slip through here); the request only where it reads no file and names no
                // remote host.
                let plan = run
                    .run
                    .plan(&run.url)
                    .unwrap_or_else(|e| panic!("{place}: {cmd}: {e}"));
                if run
                    .request
                    .body
                    .as_deref()
                    .is_none_or(|b| !b.starts_with('@'))
                    && run.request.cacert.is_none()
                    && run.request.cert.is_none()
                    && run.request.key.is_none()
                    && run.url.contains("127.0.0.1")
                {
                    let protocols = crate::protocols();
                    let protocol = protocols.for_url(&run.url);
                    if let Some(flags) = protocol.and_then(|p| run.protocols.of(&**p)) {
                        flags
                            .check_offline(&run.url, &run.request, &plan)
                            .unwrap_or_else(|e| panic!("{place}: {cmd}: {e}"));
                    }
                }
            }
        }
        match place.as_str() {
            "README.md" => checked.0 += 1,
            "--help" => checked.1 += 1,
            _ => checked.2 += 1,
        }
    }
    assert!(checked.0 >= 8, "only {} README commands found", checked.0);
    assert!(checked.2 >= 60, "only {} book commands found", checked.2);
    assert!(checked.1 >= 8, "only {} --help commands found", checked.1);
}

/// The lines of a page's shell blocks, a command continued over lines (`\\` at its end) as
/// one.
pub(super) fn commands_in(text: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut fence: Option<(&str, bool)> = None;
    let mut continued = String::new();
    for line in text.lines() {
        let t = line.trim_start();
        match fence {
            Some((f, _)) if t.starts_with(f) => fence = None,
            Some((_, false)) => {}
            Some((_, true)) => match line.trim().strip_suffix('\\') {
                Some(part) => continued.push_str(part),
                None => {
                    continued.push_str(line.trim());
                    commands.push(std::mem::take(&mut continued));
                }
            },
            None if t.starts_with("```") || t.starts_with("~~~") => {
                let info = t[3..].split([' ', ',']).next().unwrap_or_default();
                let shell = matches!(info, "" | "sh" | "bash" | "console" | "shell");
                fence = Some((&t[..3], shell));
            }
            None => {}
        }
    }
    commands
}

/// Splits a command line on spaces, honouring single and double quotes.
fn shell_words(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quote = None;
    let mut started = false;
    for c in s.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (None, ' ') => {
                if started || !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                    started = false;
                }
            }
            (None, c) => cur.push(c),
        }
    }
    if started || !cur.is_empty() {
        words.push(cur);
    }
    words
}
