//! Advancing a run: whole items of its stages while their work fits the budget, each stage's
//! items by the forward pass's pieces in llama2.c's order.

use super::sampling::sampling;
use super::{Progress, Run, Stage};
use crate::infer::backend::{Backend, Target};
use crate::infer::forward::{
    attention_heads, embed, input, rmsnorm, rotary, write_products, write_rows, Product, Scratch,
    Write,
};
use crate::infer::state::{field, get, get_u32, set_u32, StateLayout, Status, CACHE_OFFSET};
use crate::infer::{Model, Rows, RunError};
use crate::le::{put_u32, put_u64, u32_at, u64_at};
use crate::{Block, Config, MatrixKind};
use core::ops::Range;

impl Run<'_> {
    /// Advances by whole items while their work fits `budget` (at least one item), stopping
    /// early at a generated or scored token. Returns what it reached.
    pub fn advance(&mut self, model: &Model, budget: u64) -> Result<Progress, RunError> {
        self.advance_counted(model, budget).map(|(p, _)| p)
    }

    /// [`Run::advance`], and the work it did.
    pub fn advance_counted(
        &mut self,
        model: &Model,
        budget: u64,
    ) -> Result<(Progress, u64), RunError> {
        self.advance_by(model, budget, Stage::cost)
    }

    /// [`Run::advance_counted`] with the work of one item measured by `cost(stage, config,
    /// pos)` instead of [`Stage::cost`]: the program counts estimated compute units, so that a
    /// step's budget holds whatever stage it meets. The split changes, the bytes do not.
    ///
    /// A model that does not hold a section (a step given only some weight accounts) stops
    /// before the first item that reads it: `Progress::Working` after some work, and
    /// [`RunError::SectionMissing`] (nothing changed) when that is the next item.
    #[inline(always)]
    pub fn advance_by(
        &mut self,
        model: &Model,
        budget: u64,
        cost: impl Fn(Stage, &Config, u32) -> u64,
    ) -> Result<(Progress, u64), RunError> {
        let mut read = 0u32;
        self.advance_reading(model, budget, cost, &mut read)
    }

    /// [`Run::advance_by`], and the sections besides zero that its items read, one bit each
    /// (bit s for section s) added to `read`: what a step that does this work must carry.
    #[inline(always)]
    pub fn advance_reading(
        &mut self,
        model: &Model,
        budget: u64,
        cost: impl Fn(Stage, &Config, u32) -> u64,
        read: &mut u32,
    ) -> Result<(Progress, u64), RunError> {
        if model.config() != self.config {
            return Err(RunError::ModelMismatch);
        }
        let multi = self.config.section_count() > 2;
        let mut used = 0u64;
        let mut advanced = false;
        let mut scratch = Target::scratch(self.options);
        loop {
            let status = self.status();
            if status != Status::Running {
                return Ok((Progress::Finished(status), used));
            }
            let pos = self.position();
            let stage = self.stage();
            let item = u32_at(self.state, field::ITEM);
            let items = stage.items(&self.config);
            // A layer's query, key and value stages (one input, three matrices) run as one
            // split when the three fit the budget whole, where the backend takes them so: the
            // same bytes as in turn.
            if let (true, Stage::Query(layer), 0) = (Target::QUERY_KEY_VALUE_AS_ONE, stage, item) {
                let whole = |s: Stage| cost(s, &self.config, pos) * s.items(&self.config) as u64;
                let three: u64 = [stage, Stage::Key(layer), Stage::Value(layer)]
                    .map(whole)
                    .iter()
                    .sum();
                let section = stage.section(multi).unwrap_or(0);
                if three <= budget - used.min(budget) && model.holds(section) {
                    self.query_key_value(model, layer, pos, &mut scratch)?;
                    *read |= 1 << section;
                    advanced = true;
                    used += three;
                    if let Some(progress) = self.next_stage(Stage::Value(layer), pos) {
                        return Ok((progress, used));
                    }
                    continue;
                }
            }
            let cost = cost(stage, &self.config, pos);
            let room = (budget - used.min(budget)) / cost.max(1);
            let fit = match room.min((items - item) as u64) as u32 {
                0 if used == 0 => 1,
                n => n,
            };
            if fit == 0 {
                return Ok((Progress::Working, used));
            }
            if let Some(section) = stage.section(multi) {
                if !model.holds(section) {
                    if !advanced {
                        let matrix = stage.matrix().unwrap_or(0);
                        return Err(RunError::SectionMissing { section, matrix });
                    }
                    return Ok((Progress::Working, used));
                }
                *read |= 1 << section;
            }
            // The draw may end its stage before its last item, at the token drawn.
            let early = self.items(model, stage, pos, item..item + fit, &mut scratch)?;
            advanced = true;
            used += early.unwrap_or(fit) as u64 * cost;
            if early.is_none() && item + fit < items {
                put_u32(self.state, field::ITEM, item + fit);
                continue;
            }
            if let Some(progress) = self.next_stage(stage, pos) {
                return Ok((progress, used));
            }
        }
    }

    /// Layer `layer`'s query, key and value stages whole at `pos`, in one split of their rows
    /// (`Backend::QUERY_KEY_VALUE_AS_ONE`): the bytes of the three stages in turn.
    fn query_key_value(
        &mut self,
        model: &Model,
        layer: u32,
        pos: u32,
        scratch: &mut Scratch,
    ) -> Result<(), RunError> {
        let (d, kv_dim) = (self.config.dim as usize, self.layout.kv_dim);
        let at_pos = self.layout.cache_row(layer, pos);
        let r = self.layout.split(self.state);
        let input = input(r.xb, u64_at(r.header, field::XB_SUM) as i64, scratch);
        let [q, k, v] = [MatrixKind::Query, MatrixKind::Key, MatrixKind::Value]
            .map(|kind| layer_matrix(model, layer, kind).map(|m| [(m, Write::Set)]));
        let (q, k, v) = (q?, k?, v?);
        write_products(
            &mut [
                Product::new(&q, 0..d, &mut r.q[..4 * d]),
                Product::new(&k, 0..kv_dim, &mut r.keys[at_pos.clone()]),
                Product::new(&v, 0..kv_dim, &mut r.values[at_pos.clone()]),
            ],
            &input,
        );
        // As the value stage leaves its row: in the caches' offset binary.
        offset_binary(&mut r.values[at_pos], 0..kv_dim);
        Ok(())
    }

    /// Items `range` of `stage` at `pos`; `Some(n)` when the stage ended after the first `n`
    /// of them (the draw reached its token). Inlined into its one caller: on SBF a
    /// call may pass at most five arguments in registers and return no aggregate.
    #[inline(always)]
    fn items(
        &mut self,
        model: &Model,
        stage: Stage,
        pos: u32,
        range: Range<u32>,
        scratch: &mut Scratch,
    ) -> Result<Option<u32>, RunError> {
        let meta = model.metadata();
        let c = self.config;
        let rows = range.start as usize..range.end as usize;
        let first = range.start == 0;
        let layout = &self.layout;
        let r = layout.split(self.state);
        let header = r.header;
        let xb_sum = u64_at(header, field::XB_SUM) as i64;
        let hb_sum = u64_at(header, field::HB_SUM) as i64;
        let matrix = |l: u32, kind: MatrixKind| layer_matrix(model, l, kind);
        // The scratch's vector stays valid across the query, key and value stages only (they
        // read xb and write elsewhere).
        if !matches!(stage, Stage::Key(_) | Stage::Value(_)) {
            Target::forget(scratch);
        }
        match stage {
            Stage::Embed => {
                let token = token_at(r.tokens, pos, c.vocab_size)?;
                embed(r.x, &model.rows(0)?, token as usize);
            }
            Stage::AttentionNorm(_) | Stage::FeedForwardNorm(_) | Stage::FinalNorm => {
                let sum = rmsnorm(r.x, r.xb, meta, stage.coefficients(&c));
                put_u64(header, field::XB_SUM, sum as u64);
            }
            Stage::Query(layer) => {
                let m = matrix(layer, MatrixKind::Query)?;
                let input = input(r.xb, xb_sum, scratch);
                write_rows(&m, rows, &input, r.q, Write::Set);
            }
            Stage::Key(layer) => {
                let m = matrix(layer, MatrixKind::Key)?;
                let input = Target::reuse(r.xb, xb_sum, scratch);
                let out = &mut r.keys[layout.cache_row(layer, pos)];
                write_rows(&m, rows, &input, out, Write::Set);
            }
            Stage::Value(layer) => {
                let m = matrix(layer, MatrixKind::Value)?;
                let input = Target::reuse(r.xb, xb_sum, scratch);
                let out = &mut r.values[layout.cache_row(layer, pos)];
                write_rows(&m, rows.clone(), &input, out, Write::Set);
                offset_binary(out, rows);
            }
            Stage::Rotary(layer) => {
                rotary(r.q, &mut r.keys[layout.cache_row(layer, pos)], meta, pos)
            }
            Stage::Attention(layer) => {
                let group = (c.heads / c.kv_heads) as usize;
                let keys = &r.keys[layout.layer_cache(layer)];
                let values = &r.values[layout.layer_cache(layer)];
                let start = if first { 0 } else { xb_sum };
                let sum = attention_heads(
                    meta, r.q, keys, values, group, pos, rows, r.att, r.xb, scratch,
                );
                put_u64(header, field::XB_SUM, (start + sum) as u64);
            }
            Stage::Output(layer) => {
                let m = matrix(layer, MatrixKind::AttentionOutput)?;
                let input = input(r.xb, xb_sum, scratch);
                write_rows(&m, rows, &input, r.x, Write::Add);
            }
            Stage::Down(layer) => {
                let m = matrix(layer, MatrixKind::FeedForwardDown)?;
                let input = input(r.hb, hb_sum, scratch);
                write_rows(&m, rows, &input, r.x, Write::Add);
            }
            Stage::Hidden(layer) => {
                let gate = matrix(layer, MatrixKind::FeedForwardGate)?;
                let up = matrix(layer, MatrixKind::FeedForwardUp)?;
                let table = meta.block_bytes(Block::Silu);
                let input = input(r.xb, xb_sum, scratch);
                let mut sum = if first { 0 } else { hb_sum };
                Target::write_hidden(&gate, &up, table, &input, r.hb, rows.clone());
                for i in rows {
                    sum += get(r.hb, i) as i64;
                }
                put_u64(header, field::HB_SUM, sum as u64);
            }
            Stage::Classifier => {
                let m = model.rows(1)?;
                let input = input(r.xb, xb_sum, scratch);
                write_rows(&m, rows, &input, r.logits, Write::Set);
            }
            Stage::Max | Stage::Weigh | Stage::Cut | Stage::Draw => {
                let exp = meta.block_bytes(Block::Exp);
                return Ok(sampling(stage, header, r.logits, r.hist, exp, rows));
            }
        }
        Ok(None)
    }
}

impl StateLayout {
    /// Layer `l`'s key (or value) cache: bytes of the keys' (or values') region.
    #[inline(always)]
    fn layer_cache(&self, l: u32) -> Range<usize> {
        let layer = 4 * self.cache_layer;
        l as usize * layer..(l as usize + 1) * layer
    }

    /// Position `pos`'s row of layer `l`'s key (or value) cache.
    #[inline(always)]
    fn cache_row(&self, l: u32, pos: u32) -> Range<usize> {
        let start = self.cache(0, l, pos);
        start..start + 4 * self.kv_dim
    }
}

/// Token `pos` of the sequence, refused outside the vocabulary.
#[inline(always)]
fn token_at(tokens: &[u8], pos: u32, vocab: u32) -> Result<u32, RunError> {
    let token = get_u32(tokens, pos as usize);
    if token >= vocab {
        return Err(RunError::TokenOutOfRange {
            index: pos as usize,
            id: token,
            vocab,
        });
    }
    Ok(token)
}

/// Words `range` of a cache row into the caches' offset binary ([`CACHE_OFFSET`]): the value
/// row at the value stage, the key row once the rotary stage has rotated it. (Not a kind of
/// `Write`: one more in the row kernels' loop cost native runs 5%.)
#[inline(always)]
fn offset_binary(row: &mut [u8], range: Range<usize>) {
    for i in range {
        set_u32(row, i, get_u32(row, i) ^ CACHE_OFFSET);
    }
}

/// Matrix `kind` of layer `l` (the artifact's matrices 2 + 7l onwards, in `MatrixKind::LAYER`'s
/// order).
#[inline(always)]
fn layer_matrix<'m>(model: &Model<'m>, l: u32, kind: MatrixKind) -> Result<Rows<'m>, RunError> {
    let k = MatrixKind::LAYER
        .iter()
        .position(|&m| m == kind)
        .unwrap_or(0);
    model.rows(2 + 7 * l as usize + k)
}
