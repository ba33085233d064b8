// SPDX-License-Identifier: Apache-2.0
//! host: a small Rust host of libkeybay with no dependencies, the same program as
//! Examples/c-host/host.c. The declarations below are written by hand from <keybay/keybay.h>
//! (only what this program uses); see that header and docs/c-api.md for the rest.
//!
//!   host enroll APP            creates APP's store, sets the record `greeting`, enrolls a
//!                              passphrase and a recovery key ("Paper key"; printed on stdout)
//!   host open APP              opens the store, asking which method (choose_method) and its
//!                              secret (ask), and prints `greeting: <value>`
//!   host open APP --no-choice  opens without choose_method: with several methods that fails
//!                              with authentication-required, and the methods are listed
//!
//! Questions go to standard error, answers are read from standard input, one line each.
//! Exit status: 0 done; 1 a Keybay call failed (its message and [name] on stderr); 2 a method
//! must be named (authentication-required; the store's methods listed on stderr); 64 usage.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::fs::File;
use std::io::{Read, Write};
use std::mem::{offset_of, size_of, ManuallyDrop};
use std::os::fd::FromRawFd;
use std::process::ExitCode;
use std::ptr;

// ---- keybay.h, the part this program uses -------------------------------------------------

const KEYBAY_OK: c_int = 0;
const KEYBAY_ERR_AUTHENTICATION_REQUIRED: c_int = 12;
const KEYBAY_ERR_CANCELLED: c_int = 22;
const KEYBAY_INTERACTION_ABI_VERSION: u32 = 1;
// keybay_ask_kind
const KEYBAY_ASK_SECRET: c_int = 0;
const KEYBAY_ASK_NEW_SECRET: c_int = 1;
const KEYBAY_ASK_CONFIRM_NEW_SECRET: c_int = 2;

#[repr(C)]
struct KeybayStore {
    _opaque: [u8; 0],
}
#[repr(C)]
struct KeybayError {
    _opaque: [u8; 0],
}

#[repr(C)]
struct KeybayMethodInfo {
    struct_size: u32,
    id: *const c_char,
    plugin: *const c_char,
    label: *const c_char,
    needs_device: c_int,
}

#[repr(C)]
struct KeybayAskRequest {
    struct_size: u32,
    kind: c_int, // keybay_ask_kind: a C enum, int-sized
    secret_kind: *const c_char,
    prompt: *const c_char,
    method_id: *const c_char,
    plugin_id: *const c_char,
    label: *const c_char,
    app_id: *const c_char,
    tries_left: c_int,
    is_retry: c_int,
}

type AskSecret = extern "C" fn(*mut c_void, *const c_char, c_int, *mut c_char, usize, *mut usize) -> c_int;
type Confirm = extern "C" fn(*mut c_void, *const c_char) -> c_int;
type Message = extern "C" fn(*mut c_void, c_int, *const c_char);
type ShowSecret = extern "C" fn(*mut c_void, *const c_char, *const c_char);
type IsCancelled = extern "C" fn(*mut c_void) -> c_int;
type ChooseMethod = extern "C" fn(*mut c_void, *const KeybayMethodInfo, usize, *mut usize) -> c_int;
type Ask = extern "C" fn(*mut c_void, *const KeybayAskRequest, *mut c_char, usize, *mut usize) -> c_int;

/// keybay_interaction: every callback nullable (Option of a function pointer is one pointer).
#[repr(C)]
struct KeybayInteraction {
    abi_version: u32,
    struct_size: u32,
    context: *mut c_void,
    ask_secret: Option<AskSecret>,
    confirm: Option<Confirm>,
    message: Option<Message>,
    show_secret: Option<ShowSecret>,
    is_cancelled: Option<IsCancelled>,
    choose_method: Option<ChooseMethod>, // since 1.2
    ask: Option<Ask>,                    // since 1.2
}

#[repr(C)]
struct KeybayOpenOptions {
    struct_size: u32,
    app_id: *const c_char,
    root: *const c_char,
    method_id: *const c_char,
    plugin_dirs: *const *const c_char,
    no_input: c_int,
    tries: c_int, // since 1.2
}

#[link(name = "keybay")]
extern "C" {
    fn keybay_open(options: *const KeybayOpenOptions, interaction: *const KeybayInteraction, err: *mut *mut KeybayError) -> *mut KeybayStore;
    fn keybay_close(store: *mut KeybayStore);
    fn keybay_set(store: *mut KeybayStore, key: *const c_char, value: *const u8, length: usize, err: *mut *mut KeybayError) -> c_int;
    fn keybay_get(store: *mut KeybayStore, key: *const c_char, value: *mut *mut u8, length: *mut usize, err: *mut *mut KeybayError) -> c_int;
    fn keybay_free_value(value: *mut u8, length: usize);
    fn keybay_enroll(
        store: *mut KeybayStore, plugin: *const c_char, label: *const c_char, options: *const *const c_char,
        interaction: *const KeybayInteraction, method_id: *mut *mut c_char, err: *mut *mut KeybayError,
    ) -> c_int;
    fn keybay_free_string(string: *mut c_char);
    fn keybay_error_code(error: *const KeybayError) -> c_int;
    fn keybay_error_name(error: *const KeybayError) -> *const c_char;
    fn keybay_error_message(error: *const KeybayError) -> *const c_char;
    fn keybay_error_methods(error: *const KeybayError, count: *mut usize) -> *const KeybayMethodInfo;
    fn keybay_error_free(error: *mut KeybayError);
}

// ---- the host -------------------------------------------------------------------------------

const EXIT_KEYBAY: u8 = 1;
const EXIT_CHOOSE: u8 = 2;
const EXIT_USAGE: u8 = 64;

/// Standard input and output as their bare descriptors: no buffer of std's that would keep a
/// copy of a secret (and read ahead into the next answer). ManuallyDrop: never closed.
fn stdin_fd() -> ManuallyDrop<File> {
    ManuallyDrop::new(unsafe { File::from_raw_fd(0) })
}
fn stdout_fd() -> ManuallyDrop<File> {
    ManuallyDrop::new(unsafe { File::from_raw_fd(1) })
}

/// Zeroes bytes in a way the compiler may not drop as a dead store.
fn wipe(bytes: &mut [u8]) {
    for b in bytes.iter_mut() {
        unsafe { ptr::write_volatile(b, 0) };
    }
}

/// Reads one line of standard input into buf, without its newline, one byte at a time.
/// None at end of input before any byte, or for a line longer than buf (then wiped).
fn read_line(buf: &mut [u8]) -> Option<usize> {
    let mut input = stdin_fd();
    let mut n = 0;
    loop {
        let mut byte = [0u8; 1];
        match input.read(&mut byte) {
            Ok(0) if n == 0 => return None,
            Ok(0) => return Some(n),
            Ok(_) if byte[0] == b'\n' => return Some(n),
            Ok(_) if n == buf.len() => {
                wipe(&mut byte);
                wipe(buf);
                return None;
            }
            Ok(_) => {
                buf[n] = byte[0];
                n += 1;
                wipe(&mut byte);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        }
    }
}

/// A C string the library handed out, or "(none)" for NULL.
fn text<'a>(s: *const c_char) -> std::borrow::Cow<'a, str> {
    if s.is_null() { "(none)".into() } else { unsafe { CStr::from_ptr(s) }.to_string_lossy() }
}

/// Whether a struct the library made (of its own struct_size) holds the field at `offset`.
fn covers(struct_size: u32, offset: usize, field_size: usize) -> bool {
    struct_size as usize >= offset + field_size
}

/// keybay_interaction.ask: shows the whole request on stderr, reads the answer straight into
/// the library's buffer (guarded memory the library wipes after use; the host keeps no copy).
extern "C" fn ask(_: *mut c_void, request: *const KeybayAskRequest, buf: *mut c_char, capacity: usize, len: *mut usize) -> c_int {
    let r = unsafe { &*request };
    let kind = match r.kind {
        KEYBAY_ASK_SECRET => "secret",
        KEYBAY_ASK_NEW_SECRET => "new-secret",
        KEYBAY_ASK_CONFIRM_NEW_SECRET => "confirm-new-secret",
        _ => "unknown",
    };
    eprint!(
        "ask: kind={kind} secret_kind={} label=\"{}\" method_id={} plugin={} app={}",
        text(r.secret_kind), text(r.label), text(r.method_id), text(r.plugin_id), text(r.app_id)
    );
    let has_retry = covers(r.struct_size, offset_of!(KeybayAskRequest, is_retry), size_of::<c_int>());
    if has_retry {
        eprint!(" tries_left={} is_retry={}", r.tries_left, r.is_retry);
    }
    eprintln!();
    if has_retry && r.is_retry != 0 {
        eprintln!("that was wrong; try again");
    }
    // The plugin's own line when it has one, else the kind of secret.
    let has_prompt = !r.prompt.is_null() && unsafe { *r.prompt } != 0;
    eprint!("{}: ", text(if has_prompt { r.prompt } else { r.secret_kind }));
    let answer = unsafe { std::slice::from_raw_parts_mut(buf as *mut u8, capacity) };
    match read_line(answer) {
        Some(n) => {
            unsafe { *len = n };
            0
        }
        None => KEYBAY_ERR_CANCELLED,
    }
}

fn list_methods(methods: &[KeybayMethodInfo]) {
    for (i, m) in methods.iter().enumerate() {
        let needs_device = if covers(m.struct_size, offset_of!(KeybayMethodInfo, needs_device), size_of::<c_int>()) { m.needs_device } else { -1 };
        eprintln!("  {}) \"{}\" plugin={} id={} needs_device={}", i + 1, text(m.label), text(m.plugin), text(m.id), needs_device);
    }
}

/// The methods array the library handed out, as a slice (empty for NULL).
fn methods<'a>(methods: *const KeybayMethodInfo, count: usize) -> &'a [KeybayMethodInfo] {
    if methods.is_null() { &[] } else { unsafe { std::slice::from_raw_parts(methods, count) } }
}

/// keybay_interaction.choose_method: lists the methods, numbered from 1, and reads a number.
extern "C" fn choose_method(_: *mut c_void, list: *const KeybayMethodInfo, count: usize, chosen: *mut usize) -> c_int {
    eprintln!("choose a method:");
    list_methods(methods(list, count));
    eprint!("number: ");
    let mut line = [0u8; 32];
    let Some(n) = read_line(&mut line) else { return KEYBAY_ERR_CANCELLED };
    let typed = String::from_utf8_lossy(&line[..n]);
    match typed.parse::<usize>() {
        Ok(number) if (1..=count).contains(&number) => {
            unsafe { *chosen = number - 1 };
            0
        }
        _ => {
            eprintln!("no method numbered \"{typed}\"");
            KEYBAY_ERR_CANCELLED
        }
    }
}

/// keybay_interaction.show_secret: the recovery key, once it is stored, written to stdout's
/// descriptor and never copied; the library wipes its buffer when this returns.
extern "C" fn show_secret(_: *mut c_void, label: *const c_char, secret: *const c_char) {
    eprintln!("your {}, shown only now: keep it somewhere safe", text(label)); // label: the kind of secret
    let mut out = stdout_fd();
    let _ = out.write_all(b"recovery key: ");
    let _ = out.write_all(unsafe { CStr::from_ptr(secret) }.to_bytes());
    let _ = out.write_all(b"\n");
}

/// Prints a failure as "<what>: <message> [<name>]", frees the error, gives the exit status.
fn fail(what: &str, err: *mut KeybayError) -> ExitCode {
    unsafe {
        eprintln!("{what}: {} [{}]", text(keybay_error_message(err)), text(keybay_error_name(err)));
        keybay_error_free(err);
    }
    ExitCode::from(EXIT_KEYBAY)
}

fn options(app: &CStr) -> KeybayOpenOptions {
    KeybayOpenOptions {
        struct_size: size_of::<KeybayOpenOptions>() as u32,
        app_id: app.as_ptr(),
        root: ptr::null(),
        method_id: ptr::null(), // the only method, else choose_method's pick
        plugin_dirs: ptr::null(),
        no_input: 0,
        tries: 3,
    }
}

fn enroll(app: &CStr, interaction: &KeybayInteraction) -> ExitCode {
    let mut err: *mut KeybayError = ptr::null_mut();
    let store = unsafe { keybay_open(&options(app), interaction, &mut err) }; // created, platform-only
    if store.is_null() {
        return fail("open", err);
    }
    let greeting = b"hello from keybay";
    if unsafe { keybay_set(store, c"greeting".as_ptr(), greeting.as_ptr(), greeting.len(), &mut err) } != KEYBAY_OK {
        unsafe { keybay_close(store) };
        return fail("set greeting", err);
    }
    // An example's cost, not a real one.
    let fast = [c"memory-kib=8192".as_ptr(), c"iterations=1".as_ptr(), c"lanes=1".as_ptr(), ptr::null()];
    let methods: [(&CStr, &CStr, *const *const c_char); 2] =
        [(c"passphrase", c"Passphrase", fast.as_ptr()), (c"recovery", c"Paper key", ptr::null())];
    for (plugin, label, plugin_options) in methods {
        let mut id: *mut c_char = ptr::null_mut();
        let code = unsafe { keybay_enroll(store, plugin.as_ptr(), label.as_ptr(), plugin_options, interaction, &mut id, &mut err) };
        if code == KEYBAY_OK {
            eprintln!("enrolled {} {}", plugin.to_string_lossy(), text(id));
        }
        unsafe { keybay_free_string(id) }; // also set when a failed call stored the method all the same
        if code != KEYBAY_OK {
            unsafe { keybay_close(store) };
            return fail(&format!("enroll {}", plugin.to_string_lossy()), err);
        }
    }
    unsafe { keybay_close(store) };
    ExitCode::SUCCESS
}

fn open_and_read(app: &CStr, interaction: &KeybayInteraction) -> ExitCode {
    let mut err: *mut KeybayError = ptr::null_mut();
    let store = unsafe { keybay_open(&options(app), interaction, &mut err) };
    if store.is_null() {
        let mut count = 0;
        let listed = unsafe { keybay_error_methods(err, &mut count) };
        if unsafe { keybay_error_code(err) } != KEYBAY_ERR_AUTHENTICATION_REQUIRED || listed.is_null() {
            return fail("open", err);
        }
        unsafe { eprintln!("open: {} [{}]; name one of:", text(keybay_error_message(err)), text(keybay_error_name(err))) };
        list_methods(methods(listed, count));
        unsafe { keybay_error_free(err) };
        return ExitCode::from(EXIT_CHOOSE);
    }
    let mut value: *mut u8 = ptr::null_mut();
    let mut length = 0;
    if unsafe { keybay_get(store, c"greeting".as_ptr(), &mut value, &mut length, &mut err) } != KEYBAY_OK {
        unsafe { keybay_close(store) };
        return fail("get greeting", err);
    }
    let mut out = stdout_fd();
    let _ = out.write_all(b"greeting: ");
    let _ = out.write_all(unsafe { std::slice::from_raw_parts(value, length) });
    let _ = out.write_all(b"\n");
    unsafe {
        keybay_free_value(value, length); // wipes, then frees
        keybay_close(store);
    }
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let no_choice = args.len() == 4 && args[1] == "open" && args[3] == "--no-choice";
    let command = args.get(1).map(String::as_str);
    let app = match (command, args.len()) {
        (Some("enroll" | "open"), 3) => CString::new(args[2].as_str()).ok(),
        _ if no_choice => CString::new(args[2].as_str()).ok(),
        _ => None,
    };
    let Some(app) = app else {
        eprintln!("usage: host enroll APP | host open APP [--no-choice]");
        return ExitCode::from(EXIT_USAGE);
    };
    // Every callback not given is None (NULL); the interaction outlives the store it is given to.
    let interaction = KeybayInteraction {
        abi_version: KEYBAY_INTERACTION_ABI_VERSION,
        struct_size: size_of::<KeybayInteraction>() as u32,
        context: ptr::null_mut(),
        ask_secret: None, // `ask` is preferred when given
        confirm: None,
        message: None,
        show_secret: Some(show_secret),
        is_cancelled: None,
        choose_method: if no_choice { None } else { Some(choose_method) },
        ask: Some(ask),
    };
    if command == Some("enroll") { enroll(&app, &interaction) } else { open_and_read(&app, &interaction) }
}
