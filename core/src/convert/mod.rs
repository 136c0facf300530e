//! The converter: a llama2.c checkpoint and tokenizer in, a CURTAW01 artifact out. The one
//! place floating point is used; every rule of the spec and of decisions D1..D10
//! (docs/format.md) is applied here.

mod checkpoint;
mod error;
mod file;
mod plan;
mod quantize;
pub mod synth;
mod tables;
mod tokenizer;

pub use checkpoint::Tensor;
pub use error::{ConvertError, ConvertFileError};
pub use file::{convert_file, MappedFile, Summary};
pub use quantize::round_half_away;
pub use tokenizer::score_key;

use crate::layout::field;
use crate::{
    Config, DESCRIPTOR_LEN, MATRIX_TABLE_OFFSET, SECTION_ENTRY_LEN, SECTION_TABLE_OFFSET, TAG,
};
use checkpoint::Checkpoint;
use plan::Plan;
use tokenizer::Tokenizer;

/// Converts a checkpoint and its tokenizer (the bytes of the two llama2.c files) into the
/// bytes of the artifact.
pub fn convert(checkpoint: &[u8], tokenizer: &[u8]) -> Result<Vec<u8>, ConvertError> {
    let checkpoint = Checkpoint::parse(checkpoint)?;
    let config = checkpoint.config;
    let tokenizer = Tokenizer::parse(tokenizer, config.vocab_size)?;
    let plan = Plan::new(&config, checkpoint.tied, tokenizer.strings_len())?;
    let norm = tables::norm(&checkpoint)?;

    // Zeroed: unwritten header bytes and the padding of section zero stay zero (D5, D9).
    let mut out = vec![0u8; plan.file_len() as usize];
    let (section_zero, matrices) = out.split_at_mut(plan.section_lengths[0] as usize);
    write_header(section_zero, &config, &plan);
    write_i32s(section_zero, plan.blocks.norm, &norm);
    write_i32s(section_zero, plan.blocks.rotary, &tables::rotary(&config));
    write_u32s(section_zero, plan.blocks.exp, &tables::exp_table());
    write_i32s(section_zero, plan.blocks.silu, &tables::silu_table());
    write_tokenizer(section_zero, &plan, &tokenizer);
    write_matrices(matrices, &checkpoint, &plan)?;
    Ok(out)
}

fn put_u32(out: &mut [u8], at: usize, value: u32) {
    out[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

fn put_u64(out: &mut [u8], at: usize, value: u64) {
    out[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

fn write_u32s(out: &mut [u8], offset: u32, values: &[u32]) {
    for (i, &v) in values.iter().enumerate() {
        put_u32(out, offset as usize + 4 * i, v);
    }
}

fn write_i32s(out: &mut [u8], offset: u32, values: &[i32]) {
    for (i, &v) in values.iter().enumerate() {
        put_u32(out, offset as usize + 4 * i, v as u32);
    }
}

fn write_header(out: &mut [u8], c: &Config, plan: &Plan) {
    out[..8].copy_from_slice(&TAG);
    put_u32(out, field::DIM, c.dim);
    put_u32(out, field::HIDDEN_DIM, c.hidden_dim);
    put_u32(out, field::LAYERS, c.layers);
    put_u32(out, field::HEADS, c.heads);
    put_u32(out, field::KV_HEADS, c.kv_heads);
    put_u32(out, field::VOCAB_SIZE, c.vocab_size);
    put_u32(out, field::CONTEXT_LENGTH, c.context_length);
    put_u32(out, field::SECTION_COUNT, plan.section_lengths.len() as u32);
    let b = &plan.blocks;
    put_u32(out, field::NORM_OFFSET, b.norm);
    put_u32(out, field::ROTARY_OFFSET, b.rotary);
    put_u32(out, field::EXP_OFFSET, b.exp);
    put_u32(out, field::SILU_OFFSET, b.silu);
    put_u32(out, field::TOKEN_ENTRIES_OFFSET, b.token_entries);
    put_u32(out, field::SORTED_IDS_OFFSET, b.sorted_ids);
    put_u32(out, field::TOKEN_STRINGS_OFFSET, b.token_strings);
    put_u32(
        out,
        field::INV_SQRT_HEAD_SIZE,
        tables::inv_sqrt_head_size(c),
    );
    for (i, (offset, length)) in plan
        .section_offsets()
        .into_iter()
        .zip(&plan.section_lengths)
        .enumerate()
    {
        let at = SECTION_TABLE_OFFSET + SECTION_ENTRY_LEN * i;
        put_u64(out, at, offset);
        put_u64(out, at + 8, *length);
    }
    for (i, d) in plan.descriptors.iter().enumerate() {
        let at = MATRIX_TABLE_OFFSET + DESCRIPTOR_LEN * i;
        put_u32(out, at, d.section);
        put_u32(out, at + 4, d.columns);
        put_u32(out, at + 8, d.rows);
        put_u32(out, at + 12, d.row_bytes);
        put_u64(out, at + 16, d.offset);
    }
}

/// Token entries (score key, length, offset in section zero, zero), sorted ids, and the token
/// strings in id order.
fn write_tokenizer(out: &mut [u8], plan: &Plan, tokenizer: &Tokenizer) {
    let b = &plan.blocks;
    let mut at = b.token_strings as usize;
    for (id, token) in tokenizer.tokens.iter().enumerate() {
        let entry = b.token_entries as usize + 16 * id;
        put_u32(out, entry, token.score_key);
        put_u32(out, entry + 4, token.bytes.len() as u32);
        put_u32(out, entry + 8, at as u32);
        out[at..at + token.bytes.len()].copy_from_slice(token.bytes);
        at += token.bytes.len();
    }
    write_u32s(out, b.sorted_ids, &tokenizer.sorted_ids());
}

/// The checkpoint tensor and the float offset within it of matrix `index`.
fn matrix_source(c: &Config, index: usize) -> (Tensor, usize) {
    let (rows, columns) = c.matrix_shape(index);
    let size = rows as usize * columns as usize;
    match index {
        0 => (Tensor::TokenEmbedding, 0),
        1 => (Tensor::Classifier, 0),
        _ => {
            let layer = (index - 2) / 7;
            let tensor = [
                Tensor::Query,
                Tensor::Key,
                Tensor::Value,
                Tensor::AttentionOutput,
                Tensor::Gate,
                Tensor::Down,
                Tensor::Up,
            ][(index - 2) % 7];
            (tensor, layer * size)
        }
    }
}

/// Every matrix, into `out` (the file after section zero).
fn write_matrices(
    out: &mut [u8],
    checkpoint: &Checkpoint,
    plan: &Plan,
) -> Result<(), ConvertError> {
    let c = &checkpoint.config;
    let offsets = plan.section_offsets();
    let base = offsets[1];
    for (index, d) in plan.descriptors.iter().enumerate() {
        if index == 1 && checkpoint.tied {
            continue;
        }
        let (tensor, start) = matrix_source(c, index);
        let len = d.rows as usize * d.columns as usize;
        let weights = &checkpoint.tensor(tensor)[4 * start..4 * (start + len)];
        let at = (offsets[d.section as usize] - base + d.offset) as usize;
        let bytes = &mut out[at..at + d.rows as usize * d.row_bytes as usize];
        quantize::quantize_matrix(weights, d.columns as usize, d.row_bytes as usize, bytes)
            .map_err(|e| ConvertError::ScaleOutOfRange {
                matrix: index,
                name: Config::matrix_name(index),
                row: e.row,
                scale: e.scale,
            })?;
    }
    Ok(())
}
