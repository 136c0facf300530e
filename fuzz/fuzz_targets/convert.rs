//! convert on arbitrary checkpoint and tokenizer bytes. The first 4 bytes (little-endian)
//! say how many of the rest are the checkpoint; the remainder is the tokenizer. Whatever the
//! converter accepts must decode and walk.
#![no_main]

use libfuzzer_sys::fuzz_target;

mod walk;

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let split = (u32::from_le_bytes(data[..4].try_into().unwrap()) as usize).min(data.len() - 4);
    let (checkpoint, tokenizer) = data[4..].split_at(split);
    if let Ok(artifact) = curta_core::convert::convert(checkpoint, tokenizer) {
        let decoded = curta_core::decode(&artifact).expect("the converter's output decodes");
        walk::walk(&decoded);
    }
});
