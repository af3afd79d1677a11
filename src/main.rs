//! `ede`: the GUI or a CLI subcommand (`cli::main_with`, which the Python package's `ede`
//! console script runs too).

// glibc's malloc hands the frame's large vertex buffers back to the kernel and then faults
// fresh zeroed pages in on the next frame, which doubled the browser's frame time.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(ede::cli::main_with(std::env::args().collect()))
}
