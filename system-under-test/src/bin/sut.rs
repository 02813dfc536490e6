//! `sut`: runs the system under test as its own process (the container
//! images' entry point; `harness sut` is the same command). See
//! [`sut::serve`] for the arguments.

use clap::Parser;

#[derive(Parser)]
#[command(about = "The document-extraction service the harness tests")]
struct Args {
    #[command(flatten)]
    serve: sut::serve::ServeArgs,
}

fn main() -> std::process::ExitCode {
    match sut::serve::main(Args::parse().serve) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sut: error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
