fn main() {
    eprintln!("dc-features: not built yet");
    std::process::exit(2);
}
