//! The window's files (`ui/dist`, built with npm) are embedded by rust-embed: rebuild when
//! they change. The folder is made (empty) when missing, so the embed always knows where it
//! is: a debug build made before `npm run build` then reads the files once they exist.
fn main() {
    let _ = std::fs::create_dir_all("../../ui/dist");
    println!("cargo:rerun-if-changed=../../ui/dist");
}
