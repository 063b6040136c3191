fn main() {
    eprintln!("dc-trace: not built yet");
    std::process::exit(2);
}
