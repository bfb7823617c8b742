fn main() {
    std::process::exit(fcm::cli::run());
}
