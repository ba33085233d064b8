// SPDX-License-Identifier: Apache-2.0
// Tells rustc where libkeybay is: $KEYBAY_PREFIX/lib when KEYBAY_PREFIX is set, else the
// directories `pkg-config --libs keybay` names. Either way the directory goes into the
// program's run path, so it starts without LD_LIBRARY_PATH (as keybay.pc does for C).
use std::env;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=KEYBAY_PREFIX");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    if let Some(prefix) = env::var_os("KEYBAY_PREFIX") {
        let lib = format!("{}/lib", prefix.to_string_lossy());
        println!("cargo:rustc-link-search=native={lib}");
        println!("cargo:rustc-link-arg=-Wl,-rpath,{lib}");
        return;
    }
    let output = Command::new("pkg-config").args(["--libs", "keybay"]).output();
    let flags = match output {
        Ok(o) if o.status.success() => String::from_utf8(o.stdout).expect("pkg-config printed UTF-8"),
        Ok(o) => panic!(
            "pkg-config --libs keybay failed ({}); set PKG_CONFIG_PATH to PREFIX/lib/pkgconfig or KEYBAY_PREFIX to PREFIX",
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => panic!("cannot run pkg-config ({e}); set KEYBAY_PREFIX to the prefix libkeybay is installed in"),
    };
    for flag in flags.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
        } else if flag.starts_with("-Wl,") {
            println!("cargo:rustc-link-arg={flag}"); // the run path keybay.pc gives
        } // -lkeybay: src/main.rs links it by name (#[link(name = "keybay")])
    }
}
