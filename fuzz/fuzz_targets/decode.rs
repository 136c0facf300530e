//! decode and Metadata::parse on arbitrary bytes, then every accessor of what they accept.
#![no_main]

use libfuzzer_sys::fuzz_target;

mod walk;

fuzz_target!(|data: &[u8]| {
    if let Ok(meta) = curta_core::Metadata::parse(data) {
        std::hint::black_box((
            meta.config(),
            meta.sections().count(),
            meta.matrices().count(),
        ));
    }
    if let Ok(artifact) = curta_core::decode(data) {
        walk::walk(&artifact);
    }
});
