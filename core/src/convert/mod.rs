//! The converter: a llama2.c checkpoint and tokenizer in, a CURTAW01 artifact out. The one
//! place floating point is used; every rule of the spec and of decisions D1..D10
//! (docs/format.md) is applied here.

mod checkpoint;
mod error;
mod file;
mod loaded;
mod plan;
mod quantize;
pub mod synth;
mod tables;
mod tokenizer;

pub use checkpoint::Tensor;
pub use error::{ConvertError, ConvertFileError};
pub use file::{convert_file, MappedFile, Summary};
pub use loaded::LoadedFile;
pub use quantize::round_half_away;
pub use tokenizer::score_key;

use crate::le::put_u32;
use crate::{Block, Config, Header, MatrixKind, TokenEntry, SCALE_BITS, TAG};
use checkpoint::Checkpoint;
use plan::Plan;
use tokenizer::Tokenizer;

/// 2^24, the unit of the fixed-point values with 24 fractional bits.
const TWO_24: f64 = (1u64 << SCALE_BITS) as f64;

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
    let words = |values: Vec<i32>| values.into_iter().map(|v| v as u32).collect();
    let fixed_point: [(Block, Vec<u32>); 4] = [
        (Block::Norm, words(norm)),
        (Block::Rotary, words(tables::rotary(&config))),
        (Block::Exp, tables::exp_table()),
        (Block::Silu, words(tables::silu_table())),
    ];
    for (block, values) in fixed_point {
        write_words(section_zero, &plan, block, values);
    }
    write_tokenizer(section_zero, &plan, &tokenizer);
    write_matrices(matrices, &checkpoint, &plan)?;
    Ok(out)
}

/// A block of u32 words at its planned offset.
fn write_words(out: &mut [u8], plan: &Plan, block: Block, words: impl IntoIterator<Item = u32>) {
    let offset = plan.blocks.get(block) as usize;
    for (i, word) in words.into_iter().enumerate() {
        put_u32(out, offset + 4 * i, word);
    }
}

fn write_header(out: &mut [u8], config: &Config, plan: &Plan) {
    Header {
        tag: TAG,
        config: *config,
        section_count: plan.section_lengths.len() as u32,
        blocks: plan.blocks,
        inv_sqrt_head_size: tables::inv_sqrt_head_size(config),
    }
    .write(out);
    for (i, entry) in plan.sections().iter().enumerate() {
        entry.write(out, i);
    }
    for (i, descriptor) in plan.descriptors.iter().enumerate() {
        descriptor.write(out, i);
    }
}

/// Token entries (score key, length, offset in section zero, zero), sorted ids, and the token
/// strings in id order.
fn write_tokenizer(out: &mut [u8], plan: &Plan, tokenizer: &Tokenizer) {
    let entries = plan.blocks.token_entries;
    let mut at = plan.blocks.token_strings as usize;
    for (id, token) in tokenizer.tokens.iter().enumerate() {
        let entry = TokenEntry {
            score_key: token.score_key,
            length: token.bytes.len() as u32,
            offset: at as u32,
        };
        entry.write(out, TokenEntry::at(entries, id as u32));
        out[at..at + token.bytes.len()].copy_from_slice(token.bytes);
        at += token.bytes.len();
    }
    write_words(out, plan, Block::SortedIds, tokenizer.sorted_ids());
}

/// The checkpoint tensor and the float offset within it of matrix `index`.
fn matrix_source(c: &Config, index: usize) -> (Tensor, usize) {
    let (kind, layer) = MatrixKind::of(index);
    let (rows, columns) = kind.shape(c);
    let start = layer.unwrap_or(0) as usize * rows as usize * columns as usize;
    (Tensor::holding(kind), start)
}

/// Every matrix, into `out` (the file after section zero).
fn write_matrices(
    out: &mut [u8],
    checkpoint: &Checkpoint,
    plan: &Plan,
) -> Result<(), ConvertError> {
    let c = &checkpoint.config;
    let sections = plan.sections();
    let base = sections[1].offset;
    for (index, d) in plan.descriptors.iter().enumerate() {
        if index == 1 && checkpoint.tied {
            continue;
        }
        let (tensor, start) = matrix_source(c, index);
        let len = d.rows as usize * d.columns as usize;
        let weights = &checkpoint.tensor(tensor)[4 * start..4 * (start + len)];
        let at = (sections[d.section as usize].offset - base + d.offset) as usize;
        let bytes = &mut out[at..at + d.byte_len() as usize];
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
