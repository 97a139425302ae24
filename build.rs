//! Compiles `include/gridsel.h` with the platform C compiler and checks that
//! its structs have the sizes the Rust side (`api`) asserts, so the
//! header cannot drift from the library.

fn main() {
    println!("cargo:rerun-if-changed=include/gridsel.h");
    println!("cargo:rerun-if-changed=include/gridsel_abi_check.c");
    cc::Build::new()
        .file("include/gridsel_abi_check.c")
        .include("include")
        .warnings_into_errors(true)
        .compile("gridsel_abi_check");
}
