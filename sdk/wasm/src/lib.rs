//! curta-core's integer inference for JavaScript: a C ABI over wasm linear memory.
//!
//! One implementation: every export below calls `curta_core::infer` (the same code `client
//! run` and the program run); nothing here computes a number of the forward pass. The
//! JavaScript side (sdk/src/run.ts) allocates the artifact and the state buffer in linear
//! memory with [`curta_alloc`], loads the model once with [`curta_load`], then starts a run
//! ([`curta_start`], [`curta_score`]) and advances it ([`curta_advance`]): each advance resumes
//! the run from its state bytes (`Run::resume` checks them) and stops at the next token.
//!
//! The artifact's reader is core's too: [`curta_read_artifact`] and [`curta_read_section_zero`]
//! check an artifact's head or a section zero (`decode_head`, `Metadata::parse`) and leave the
//! facts the SDK shows (configuration, section table, block offsets, descriptors) in
//! [`curta_facts`]; sdk/src/artifact.ts has no checks of its own.
//!
//! Errors: a negative return; [`curta_error`] and [`curta_error_len`] then hold the message
//! (the Rust error's Display), [`curta_error_code`] the variant's name and [`curta_error_debug`]
//! its Debug form (the variant's fields, which the SDK gives as the error's details). A panic
//! (none is expected: the core checks its inputs) traps.
//!
//! Pointers and lengths are u32 offsets into linear memory. The module is built by
//! scripts/build-wasm; on a host target the crate builds as a normal library (for clippy).
#![cfg_attr(target_arch = "wasm32", no_std)]

use core::cell::UnsafeCell;
use core::fmt::Write;
use curta_core::infer::{
    decode, encode, state_len, Model, Progress, Run, RunError, Settings, StateLayout, Status,
};
use curta_core::{Metadata, MAX_SECTIONS};

/// What the module holds between calls: the loaded model (over bytes in linear memory that
/// are never freed) and the last error's message.
struct Global {
    model: Option<Model<'static>>,
    error: [u8; 1024],
    error_len: usize,
    code: [u8; 64],
    code_len: usize,
    debug: [u8; 1024],
    debug_len: usize,
    out: [u32; 4],
    facts: [u32; FACTS_LEN],
    /// The first free byte of linear memory (0 before the first allocation).
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    heap: usize,
}

struct Cell(UnsafeCell<Global>);
// SAFETY: a wasm instance runs one thread; the exports never reenter each other.
unsafe impl Sync for Cell {}

static GLOBAL: Cell = Cell(UnsafeCell::new(Global {
    model: None,
    error: [0; 1024],
    error_len: 0,
    code: [0; 64],
    code_len: 0,
    debug: [0; 1024],
    debug_len: 0,
    out: [0; 4],
    facts: [0; FACTS_LEN],
    heap: 0,
}));

fn global() -> &'static mut Global {
    // SAFETY: single-threaded, and no export holds this reference across another export.
    unsafe { &mut *GLOBAL.0.get() }
}

/// A byte-buffer writer for error messages (truncated at the buffer's end).
struct Message<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl Write for Message<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let n = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

fn fail(e: impl core::fmt::Display + core::fmt::Debug) -> i32 {
    let g = global();
    let mut m = Message {
        buf: &mut g.error,
        len: 0,
    };
    let _ = write!(m, "{e}");
    g.error_len = m.len;
    // The Debug form, a format error inside a run error by its own variant
    // ("Format(FieldOutOfRange { .. })" as "FieldOutOfRange { .. }"), and the variant's name.
    let mut d = Message {
        buf: &mut g.debug,
        len: 0,
    };
    let _ = write!(d, "{e:?}");
    let len = d.len;
    let start = if g.debug[..len].starts_with(b"Format(") {
        7
    } else {
        0
    };
    let end = if start > 0 { len - 1 } else { len };
    g.debug.copy_within(start..end, 0);
    g.debug_len = end - start;
    let n = g.debug[..g.debug_len]
        .iter()
        .position(|b| !b.is_ascii_alphanumeric())
        .unwrap_or(g.debug_len)
        .min(g.code.len());
    g.code[..n].copy_from_slice(&g.debug[..n]);
    g.code_len = n;
    -1
}

/// The message of the last failed call.
#[no_mangle]
pub extern "C" fn curta_error() -> *const u8 {
    global().error.as_ptr()
}

#[no_mangle]
pub extern "C" fn curta_error_len() -> u32 {
    global().error_len as u32
}

/// The Rust error variant's name of the last failed call (e.g. `StepsPastContext`).
#[no_mangle]
pub extern "C" fn curta_error_code() -> *const u8 {
    global().code.as_ptr()
}

#[no_mangle]
pub extern "C" fn curta_error_code_len() -> u32 {
    global().code_len as u32
}

/// The Debug form of the last failed call's error (`FieldOutOfRange { field: "layers", .. }`).
#[no_mangle]
pub extern "C" fn curta_error_debug() -> *const u8 {
    global().debug.as_ptr()
}

#[no_mangle]
pub extern "C" fn curta_error_debug_len() -> u32 {
    global().debug_len as u32
}

/// Four u32 results of the last advance: the progress kind's position, the token (or argmax),
/// the status.
#[no_mangle]
pub extern "C" fn curta_out() -> *const u32 {
    global().out.as_ptr()
}

/// `len` bytes of linear memory, 16-aligned, never freed (one instance per model); 0 when
/// memory cannot grow.
#[no_mangle]
pub extern "C" fn curta_alloc(len: u32) -> *mut u8 {
    heap_alloc(len as usize)
}

#[cfg(target_arch = "wasm32")]
fn heap_alloc(len: usize) -> *mut u8 {
    extern "C" {
        static __heap_base: u8;
    }
    const PAGE: usize = 65_536;
    let g = global();
    if g.heap == 0 {
        // Only the symbol's address is taken (no read); wasm-ld defines it.
        g.heap = core::ptr::addr_of!(__heap_base) as usize;
    }
    let start = (g.heap + 15) & !15;
    let Some(end) = start.checked_add(len) else {
        return core::ptr::null_mut();
    };
    let have = core::arch::wasm32::memory_size(0) * PAGE;
    if end > have {
        let pages = (end - have).div_ceil(PAGE);
        if core::arch::wasm32::memory_grow(0, pages) == usize::MAX {
            return core::ptr::null_mut();
        }
    }
    g.heap = end;
    start as *mut u8
}

#[cfg(not(target_arch = "wasm32"))]
fn heap_alloc(_len: usize) -> *mut u8 {
    core::ptr::null_mut()
}

/// # Safety
/// `ptr..ptr + len` lies in linear memory (the caller allocated it with `curta_alloc`).
unsafe fn bytes<'a>(ptr: *const u8, len: u32) -> &'a [u8] {
    if len == 0 {
        return &[];
    }
    core::slice::from_raw_parts(ptr, len as usize)
}

/// # Safety
/// As [`bytes`], for a buffer only this call uses.
unsafe fn bytes_mut<'a>(ptr: *mut u8, len: u32) -> &'a mut [u8] {
    if len == 0 {
        return &mut [];
    }
    core::slice::from_raw_parts_mut(ptr, len as usize)
}

/// # Safety
/// `ptr..ptr + 4 × len` lies in linear memory, 4-aligned.
unsafe fn words<'a>(ptr: *const u32, len: u32) -> &'a [u32] {
    if len == 0 {
        return &[];
    }
    core::slice::from_raw_parts(ptr, len as usize)
}

fn model() -> Result<&'static Model<'static>, &'static str> {
    global()
        .model
        .as_ref()
        .ok_or("no model is loaded (curta_load first)")
}

/// Decodes the artifact at `ptr` (the whole file, sections in order) with curta-core's
/// `decode` and keeps it as the model of the later calls. The bytes must stay untouched.
///
/// # Safety
/// `ptr..ptr + len` was allocated by `curta_alloc` and is never written again.
#[no_mangle]
pub unsafe extern "C" fn curta_load(ptr: *const u8, len: u32) -> i32 {
    let file: &'static [u8] = bytes(ptr, len);
    let artifact = match curta_core::decode(file) {
        Ok(a) => a,
        Err(e) => return fail(e),
    };
    match Model::from_artifact(&artifact) {
        Ok(m) => {
            global().model = Some(m);
            0
        }
        Err(e) => fail(e),
    }
}

/// The state buffer's length for the loaded model (`state_len`); 0 when none is loaded.
#[no_mangle]
pub extern "C" fn curta_state_len() -> u32 {
    match model() {
        Ok(m) => state_len(&m.config()) as u32,
        Err(_) => 0,
    }
}

/// The byte offset of the logits region in the state (docs/inference.md, "The state buffer").
#[no_mangle]
pub extern "C" fn curta_logits_offset() -> u32 {
    match model() {
        Ok(m) => StateLayout::new(&m.config()).logits as u32,
        Err(_) => 0,
    }
}

fn result(r: Result<(), RunError>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => fail(e),
    }
}

/// `Run::start` in the state buffer: `prompt_len` token ids at `prompt`, up to `steps`
/// tokens, temperature and top-p with 16 fractional bits, the generator's seed.
///
/// # Safety
/// The buffers lie in linear memory; `prompt` is 4-aligned.
#[no_mangle]
pub unsafe extern "C" fn curta_start(
    state: *mut u8,
    state_len: u32,
    prompt: *const u32,
    prompt_len: u32,
    steps: u32,
    temperature: u32,
    top_p: u32,
    seed: u64,
) -> i32 {
    let m = match model() {
        Ok(m) => m,
        Err(e) => return fail(e),
    };
    let settings = Settings {
        temperature,
        top_p,
        seed,
    };
    let (state, prompt) = (bytes_mut(state, state_len), words(prompt, prompt_len));
    result(Run::start(state, m, prompt, steps, settings).map(|_| ()))
}

/// `Run::score` (teacher forcing) over `len` tokens at `tokens`.
///
/// # Safety
/// As [`curta_start`].
#[no_mangle]
pub unsafe extern "C" fn curta_score(
    state: *mut u8,
    state_len: u32,
    tokens: *const u32,
    len: u32,
) -> i32 {
    let m = match model() {
        Ok(m) => m,
        Err(e) => return fail(e),
    };
    let (state, tokens) = (bytes_mut(state, state_len), words(tokens, len));
    result(Run::score(state, m, tokens).map(|_| ()))
}

/// Resumes the run in the state buffer and advances it by at most `budget` units of work
/// (`Run::advance`; u64::MAX: to the next token). Returns 0 Working, 1 Token (out: position,
/// id), 2 Scored (out: position, argmax), 3 Finished (out[2]: the status, 1 end token, 2 done);
/// −1 on an error.
///
/// # Safety
/// As [`curta_start`].
#[no_mangle]
pub unsafe extern "C" fn curta_advance(state: *mut u8, state_len: u32, budget: u64) -> i32 {
    let m = match model() {
        Ok(m) => m,
        Err(e) => return fail(e),
    };
    let state = bytes_mut(state, state_len);
    let mut run = match Run::resume(state, m) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let progress = match run.advance(m, budget) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let out = &mut global().out;
    *out = [0; 4];
    match progress {
        Progress::Working => 0,
        Progress::Token { pos, id } => {
            *out = [pos, id, 0, 0];
            1
        }
        Progress::Scored { pos, argmax } => {
            *out = [pos, argmax, 0, 0];
            2
        }
        Progress::Finished(status) => {
            out[2] = match status {
                Status::Running => 0,
                Status::EndToken => 1,
                Status::Done => 2,
            };
            3
        }
    }
}

/// `encode`: the prompt's tokens for the UTF-8 `text` into `out` (room for `out_len` ids, at
/// least text length + 2); returns how many, or −1.
///
/// # Safety
/// The buffers lie in linear memory; `out` is 4-aligned.
#[no_mangle]
pub unsafe extern "C" fn curta_encode(
    text: *const u8,
    text_len: u32,
    out: *mut u32,
    out_len: u32,
) -> i32 {
    let m = match model() {
        Ok(m) => m,
        Err(e) => return fail(e),
    };
    let out: &mut [u32] = if out_len == 0 {
        &mut []
    } else {
        core::slice::from_raw_parts_mut(out, out_len as usize)
    };
    match encode(m.metadata(), bytes(text, text_len), out) {
        Ok(n) => n as i32,
        Err(e) => fail(e),
    }
}

/// `decode`: the bytes `token` adds to the text after `previous`, written to `out` (room for
/// 128 bytes, a token's longest); returns how many, or −1.
///
/// # Safety
/// `out..out + 128` lies in linear memory.
#[no_mangle]
pub unsafe extern "C" fn curta_decode(previous: u32, token: u32, out: *mut u8) -> i32 {
    let m = match model() {
        Ok(m) => m,
        Err(e) => return fail(e),
    };
    match decode(m.metadata(), previous, token) {
        Ok(piece) => {
            let b = piece.bytes();
            bytes_mut(out, curta_core::MAX_TOKEN_LEN as u32)[..b.len()].copy_from_slice(b);
            b.len() as i32
        }
        Err(e) => fail(e),
    }
}

/// `parse_fixed16`: a decimal setting (temperature, top-p) as the CLI reads it, with 16
/// fractional bits; −1 when it is not such a decimal.
///
/// # Safety
/// `text..text + len` lies in linear memory.
#[no_mangle]
pub unsafe extern "C" fn curta_parse_fixed16(text: *const u8, len: u32) -> i64 {
    match core::str::from_utf8(bytes(text, len))
        .ok()
        .and_then(curta_core::infer::parse_fixed16)
    {
        Some(v) => v as i64,
        None => -1,
    }
}

/// The most matrices a model has: 2 + 7 × 16 layers.
const MAX_MATRICES: usize = 2 + 7 * 16;
/// Words of [`curta_facts`]: 7 configuration fields, the section count, header byte 68, 7 block
/// offsets, then per section its offset and length, then per matrix its section, columns,
/// rows, row length and offset.
const FACTS_LEN: usize = 16 + 2 * MAX_SECTIONS + 5 * MAX_MATRICES;

/// The facts of the section zero the last read checked, as u32 words (see [`FACTS_LEN`]).
/// Every offset and length fits: the sections end before 18 × 10,483,712 bytes.
#[no_mangle]
pub extern "C" fn curta_facts() -> *const u32 {
    global().facts.as_ptr()
}

fn facts(metadata: &Metadata) -> i32 {
    let f = &mut global().facts;
    *f = [0; FACTS_LEN];
    f[..7].copy_from_slice(&metadata.config().fields());
    f[7] = metadata.section_count() as u32;
    f[8] = metadata.inv_sqrt_head_size();
    f[9..16].copy_from_slice(&metadata.blocks().offsets());
    for (i, s) in metadata.sections().enumerate() {
        f[16 + 2 * i] = s.offset as u32;
        f[17 + 2 * i] = s.length as u32;
    }
    let at = 16 + 2 * MAX_SECTIONS;
    for (i, d) in metadata.matrices().enumerate() {
        let words = [d.section, d.columns, d.rows, d.row_bytes, d.offset as u32];
        f[at + 5 * i..at + 5 * i + 5].copy_from_slice(&words);
    }
    0
}

/// `decode_head`: curta-core's checks of an artifact of `file_len` bytes, whose first `len`
/// bytes (at least `min(file_len, MAX_SECTION_LEN)`) are at `ptr`. 0 with [`curta_facts`]
/// set, or −1.
///
/// # Safety
/// `ptr..ptr + len` lies in linear memory.
#[no_mangle]
pub unsafe extern "C" fn curta_read_artifact(ptr: *const u8, len: u32, file_len: u64) -> i32 {
    match curta_core::decode_head(bytes(ptr, len), file_len) {
        Ok(m) => facts(&m),
        Err(e) => fail(e),
    }
}

/// `Metadata::parse`: curta-core's checks of section zero alone (`len` bytes at `ptr`). 0 with
/// [`curta_facts`] set, or −1.
///
/// # Safety
/// `ptr..ptr + len` lies in linear memory.
#[no_mangle]
pub unsafe extern "C" fn curta_read_section_zero(ptr: *const u8, len: u32) -> i32 {
    match Metadata::parse(bytes(ptr, len)) {
        Ok(m) => facts(&m),
        Err(e) => fail(e),
    }
}

#[cfg(target_arch = "wasm32")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::arch::wasm32::unreachable()
}
