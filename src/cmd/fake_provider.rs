//! `fcm fake-provider`: the scripted fake provider as a process, for benchmark scripts.

use std::collections::HashMap;
use std::io::Write;

use anyhow::{Context, Result};

use crate::cli::FakeProviderArgs;
use crate::fake_provider::FakeProvider;

pub fn run(args: FakeProviderArgs) -> Result<i32> {
    let fake = FakeProvider::start_with(args.port, HashMap::new(), !args.no_record)
        .with_context(|| format!("cannot listen on 127.0.0.1:{}", args.port))?;
    println!("{}", fake.base_url());
    std::io::stdout().flush()?;
    fake.wait_forever()
}
