fn main() -> std::process::ExitCode {
    mcpjail::cli::main_mcpjail()
}
