// Reads every accessor of a decoded artifact, as a consumer would (included by both targets).

pub fn walk(artifact: &curta_core::Artifact) {
    let meta = artifact.metadata();
    let c = meta.config();
    let _ = (
        meta.blocks(),
        meta.inv_sqrt_head_size(),
        c.head_size(),
        c.kv_dim(),
        c.weight_count(),
    );
    assert_eq!(meta.section_count(), artifact.section_count());
    let mut total = 0u64;
    for (i, s) in meta.sections().enumerate() {
        assert_eq!(artifact.section(i).len() as u64, s.length);
        total += s.length;
    }
    assert_eq!(total, artifact.bytes().len() as u64);
    for i in 0..meta.matrix_count() {
        let m = artifact.matrix(i);
        assert_eq!(m.descriptor, meta.matrix(i));
        for r in 0..m.descriptor.rows {
            let row = m.row(r);
            assert_eq!(row.weights.len(), m.descriptor.columns as usize);
        }
    }
    assert_eq!(meta.matrices().count(), meta.matrix_count());
    let mut sum = 0i64;
    for i in 0..c.norm_len() {
        sum += meta.norm(i) as i64;
    }
    for i in 0..c.rotary_len() {
        sum += meta.rotary(i) as i64;
    }
    for i in 0..curta_core::EXP_TABLE_LEN {
        sum += meta.exp(i) as i64;
    }
    for i in 0..curta_core::SILU_TABLE_LEN {
        sum += meta.silu(i) as i64;
    }
    for id in 0..c.vocab_size {
        let entry = meta.token(id);
        if let Ok(bytes) = meta.token_bytes(id) {
            assert_eq!(bytes.len(), entry.length as usize);
        }
        // The lookup an encoder does: a sorted id, then its token's bytes.
        if let Ok(sorted) = meta.sorted_id(id) {
            sum += meta.token(sorted).length as i64;
            sum += meta.token_bytes(sorted).map_or(0, |b| b.len() as i64);
        }
    }
    std::hint::black_box(sum);
    std::hint::black_box(curta_core::weights_hash(artifact.sections()));
}
