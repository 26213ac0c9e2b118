//! The `throng` command: parse, call the library, map the outcome to an exit code.

fn main() -> std::process::ExitCode {
    throng::command_line()
}
