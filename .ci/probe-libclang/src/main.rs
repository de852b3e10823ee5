//! Prints the version of the libclang that clang-sys found and linked, from libclang itself.
fn main() {
    // SAFETY: clang_getClangVersion has no preconditions; the CXString is read once and disposed.
    let version = unsafe {
        let s = clang_sys::clang_getClangVersion();
        let text = std::ffi::CStr::from_ptr(clang_sys::clang_getCString(s))
            .to_string_lossy()
            .into_owned();
        clang_sys::clang_disposeString(s);
        text
    };
    println!("libclang loads: {version}");
}
