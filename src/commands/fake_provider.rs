//! `fcm fake-provider`: the scripted fake provider as a process, for benchmark scripts.

use std::collections::HashMap;
use std::io::Write;

use anyhow::{Context, Result};
use argh::{ArgsInfo, FromArgs};

use crate::commands::exit::ExitCode;
use crate::fake_provider::FakeProvider;

#[derive(FromArgs, ArgsInfo)]
#[argh(help_triggers("-h", "--help", "help"))]
#[argh(subcommand, name = "fake-provider")]
/// Run the scripted fake provider on loopback (tests and benchmark scripts).
pub(crate) struct FakeProviderArgs {
    /// port on 127.0.0.1 (default 0: any free port, printed on stdout)
    #[argh(option, default = "0")]
    pub(crate) port: u16,
    /// keep no log of requests (long benchmark runs)
    #[argh(switch)]
    pub(crate) no_record: bool,
}

pub(crate) fn run(args: FakeProviderArgs) -> Result<ExitCode> {
    let fake = FakeProvider::start_with(args.port, HashMap::new(), !args.no_record)
        .with_context(|| format!("cannot listen on 127.0.0.1:{}", args.port))?;
    println!("{}", fake.base_url());
    std::io::stdout().flush()?;
    fake.wait_forever()
}
