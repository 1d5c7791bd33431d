//! The `aam` binary: parse arguments, set up logging, run, exit with the right code.

fn main() {
    std::process::exit(aam::cli::main());
}
