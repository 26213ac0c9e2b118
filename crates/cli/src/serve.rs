//! `throng serve`'s targets as clap types: the testbed's (`http`, `bank`, `grpc`) and every
//! registered protocol's own server (`tcp`, `ws`), each a subcommand with its flags.

use clap::Args;

/// `throng serve TARGET`: a subcommand a target, each with its flags.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Which target.
    #[command(subcommand)]
    pub target: ServeTarget,
}

/// A target of `throng serve`: one of the testbed's (`http`, `bank`, `grpc`), or a registered
/// protocol's own server (`tcp`, `ws`: [`crate::servers`]).
#[derive(Debug)]
pub enum ServeTarget {
    /// One of the testbed's.
    Testbed(throng_testbed::serve::ServeArgs),
    /// A protocol's: its server and its subcommand's flags.
    Protocol(crate::Server, clap::ArgMatches),
}

fn testbed_target(name: &str) -> Option<throng_testbed::serve::ServeTarget> {
    <throng_testbed::serve::ServeTarget as clap::ValueEnum>::from_str(name, false).ok()
}

impl clap::FromArgMatches for ServeTarget {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let Some((name, sub)) = matches.subcommand() else {
            return Err(clap::Error::new(clap::error::ErrorKind::MissingSubcommand));
        };
        if let Some(target) = testbed_target(name) {
            let mut a = throng_testbed::serve::ServeArgs::from_arg_matches(sub)?;
            a.target = target;
            return Ok(ServeTarget::Testbed(a));
        }
        match crate::servers().into_iter().find(|s| s.name == name) {
            Some(server) => Ok(ServeTarget::Protocol(server, sub.clone())),
            None => Err(clap::Error::new(clap::error::ErrorKind::InvalidSubcommand)),
        }
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl clap::Subcommand for ServeTarget {
    fn augment_subcommands(cmd: clap::Command) -> clap::Command {
        use clap::ValueEnum;
        let testbed = throng_testbed::serve::ServeTarget::value_variants()
            .iter()
            .filter_map(|t| t.to_possible_value())
            .fold(cmd, |cmd, v| {
                // A few bytes once per process: a command's name is `'static` to clap.
                let name: &'static str = v.get_name().to_string().leak();
                let sub = <throng_testbed::serve::ServeArgs as Args>::augment_args(
                    clap::Command::new(name),
                );
                cmd.subcommand(sub.about(v.get_help().cloned().unwrap_or_default()))
            });
        crate::servers()
            .iter()
            .fold(testbed, |cmd, s| cmd.subcommand(s.command()))
            .subcommand_required(true)
    }

    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_subcommands(cmd)
    }

    fn has_subcommand(name: &str) -> bool {
        testbed_target(name).is_some() || crate::servers().iter().any(|s| s.name == name)
    }
}
