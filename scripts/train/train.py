"""Trains Curta's bundled English model on the King James Bible, on the CPU.

Everything here is written for this repository from llama2.c's run.c (its forward pass, its
checkpoint and tokenizer files, its encoder); llama2.c's own training code is not used.

    train.py KJV_TXT OUT_DIR [--steps N] [--seed S]

KJV_TXT is the output of Debian's `bible` program over the whole text (scripts/train-model
makes it). OUT_DIR receives:
    kjv.bin            the model, llama2.c checkpoint format version 0 (run.c's legacy format)
    tok1024.bin        the tokenizer, llama2.c's tokenizer.bin format
    kjv-heldout.txt    the held-out chapters, one a line (never trained on)
    kjv-heldout.json   a slice of the held-out text, its token ids under run.c's encoder and
                       PyTorch's float figures on it (the Rust tests' independent expectations)
    train-log.txt      the run's settings, losses and time
"""

import argparse
import json
import math
import re
import struct
import sys
import time

import torch
import torch.nn.functional as F

# The model: dim 96, 6 query heads of 16 over 2 key/value heads, 4 layers, SwiGLU of 256,
# 1,024 tokens, 256 positions, classifier shared with the embedding (about 500K parameters:
# small enough to train in well under an hour on 2 shared cores).
DIM, HIDDEN, LAYERS, HEADS, KV_HEADS, VOCAB, SEQ_LEN = 96, 256, 4, 6, 2, 1024, 256
HELD_OUT_EVERY = 20  # every 20th chapter is held out (chapters 7, 27, 47, ... from 0)
BATCH = 16


# ---------------------------------------------------------------------------------------------
# The corpus


def read_chapters(path):
    """Chapters of `bible -l10000 gen1:1-rev22:21`: a "Book N" line, then one verse a line as
    "  N text". Returns [(title, text)] with a chapter's verses joined by one space."""
    chapters = []
    for line in open(path, encoding="ascii"):
        line = line.rstrip("\n")
        verse = re.match(r"^\s+\d+ (.*)$", line)
        if verse:
            chapters[-1][1].append(" ".join(verse.group(1).split()))
        elif line.strip():
            chapters.append((line.strip(), []))
    return [(title, " ".join(verses)) for title, verses in chapters]


# ---------------------------------------------------------------------------------------------
# The tokenizer: byte-pair merges learned on the training chapters, written so that run.c's
# encoder (a " " prefix, one token per character or a byte token <0xXX> at id 3 + byte, then
# the adjacent pair whose concatenation has the highest score merged until none is in the
# vocabulary) gives the ids it was trained with.

# Pre-tokenization: an optional space then letters (and apostrophes), or an optional space then
# other characters. Merges never cross these chunks, so every learned token is letters or
# punctuation, with a space only as its first byte; then no concatenation across two chunks is
# ever in the vocabulary, and encoding chunk by chunk is exactly run.c's whole-string encoding.
CHUNK = re.compile(r" ?[A-Za-z']+| ?[^A-Za-z' ]+| ")


def train_bpe(texts, vocab_size):
    chars = sorted({c for t in texts for c in t})
    n_merges = vocab_size - 259 - len(chars)
    counts = {}
    for t in texts:
        for chunk in CHUNK.findall(t):
            counts[chunk] = counts.get(chunk, 0) + 1
    words = [(list(w), n) for w, n in counts.items()]
    merges = []
    for _ in range(n_merges):
        pairs = {}
        for symbols, n in words:
            for a, b in zip(symbols, symbols[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + n
        # Most frequent pair; ties by the pair itself, so the result does not depend on order.
        (a, b), _ = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        merged = a + b
        merges.append(merged)
        for symbols, _ in words:
            i = 0
            while i < len(symbols) - 1:
                if symbols[i] == a and symbols[i + 1] == b:
                    symbols[i : i + 2] = [merged]
                i += 1
    # llama2.c's sentencepiece layout: <unk>, <s>, </s>, the 256 byte tokens, then the merged
    # tokens by rank (score -rank: the earliest merge wins), then the single characters.
    pieces = ["<unk>", "\n<s>\n", "\n</s>\n"] + ["<0x%02X>" % b for b in range(256)]
    scores = [0.0] * 259
    for rank, piece in enumerate(merges + chars):
        pieces.append(piece)
        scores.append(-float(rank))
    assert len(pieces) == vocab_size and len(set(pieces)) == vocab_size
    return pieces, scores


class Encoder:
    """run.c's `encode`, applied chunk by chunk (see CHUNK) with a cache."""

    def __init__(self, pieces, scores):
        self.ids = {p: i for i, p in enumerate(pieces)}
        self.scores = scores
        self.cache = {}

    def symbols(self, text):
        out = []
        for c in text:
            if c in self.ids:
                out.append(self.ids[c])
            else:  # byte fallback: <0xXX> is id 3 + byte
                out.extend(3 + b for b in c.encode("utf-8"))
        return out

    def merge(self, ids, pieces):
        while True:
            best, best_score = None, -1e10
            for i in range(len(ids) - 1):
                j = self.ids.get(pieces[ids[i]] + pieces[ids[i + 1]])
                if j is not None and self.scores[j] > best_score:
                    best, best_score = (i, j), self.scores[j]
            if best is None:
                return ids
            i, j = best
            ids[i : i + 2] = [j]

    def encode(self, text, pieces):
        """BOS (1), then the ids of " " + text, as run.c's encode(text, bos=1, eos=0)."""
        out = [1]
        for chunk in CHUNK.findall(" " + text):
            if chunk not in self.cache:
                self.cache[chunk] = self.merge(self.symbols(chunk), pieces)
            out.extend(self.cache[chunk])
        return out

    def encode_whole(self, text, pieces):
        """run.c's encode on the whole string at once (slow): the check that chunks are exact."""
        return [1] + self.merge(self.symbols(" " + text), pieces)


def write_tokenizer(path, pieces, scores):
    data = [p.encode("utf-8") for p in pieces]
    with open(path, "wb") as f:
        f.write(struct.pack("<I", max(len(d) for d in data)))
        for d, s in zip(data, scores):
            f.write(struct.pack("<fI", s, len(d)))
            f.write(d)


# ---------------------------------------------------------------------------------------------
# The model: run.c's forward() over a whole sequence at once.


def rmsnorm(x, weight):
    return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5))


def rope_tables(seq_len, head_size):
    # run.c: for each even i of a head, freq = 1 / 10000^(i / head_size), angle = pos * freq,
    # and the pair (i, i + 1) turns by it. The pairs are adjacent values, not the two halves.
    freq = 1.0 / (10000.0 ** (torch.arange(0, head_size, 2).float() / head_size))
    angle = torch.outer(torch.arange(seq_len).float(), freq)  # (seq_len, head_size / 2)
    return angle.cos(), angle.sin()


def rope(x, cos, sin):
    # x: (batch, heads, seq, head_size); rotate each (even, odd) pair.
    a, b = x[..., 0::2], x[..., 1::2]
    out = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1)
    return out.flatten(-2)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        hs = DIM // HEADS
        kv = KV_HEADS * hs
        p = torch.nn.Parameter
        self.embedding = p(torch.randn(VOCAB, DIM) * 0.02)
        self.rms_att = p(torch.ones(LAYERS, DIM))
        # run.c's matrices are (out, in): y = W x.
        self.wq = p(torch.randn(LAYERS, DIM, DIM) * 0.02)
        self.wk = p(torch.randn(LAYERS, kv, DIM) * 0.02)
        self.wv = p(torch.randn(LAYERS, kv, DIM) * 0.02)
        # Residual projections scaled down by depth (GPT-2's initialization).
        out_std = 0.02 / math.sqrt(2 * LAYERS)
        self.wo = p(torch.randn(LAYERS, DIM, DIM) * out_std)
        self.rms_ffn = p(torch.ones(LAYERS, DIM))
        self.w1 = p(torch.randn(LAYERS, HIDDEN, DIM) * 0.02)
        self.w2 = p(torch.randn(LAYERS, DIM, HIDDEN) * out_std)
        self.w3 = p(torch.randn(LAYERS, HIDDEN, DIM) * 0.02)
        self.rms_final = p(torch.ones(DIM))
        cos, sin = rope_tables(SEQ_LEN, hs)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, tokens):
        batch, seq = tokens.shape
        hs = DIM // HEADS
        cos, sin = self.cos[:seq], self.sin[:seq]
        x = self.embedding[tokens]
        for l in range(LAYERS):
            xb = rmsnorm(x, self.rms_att[l])
            q = (xb @ self.wq[l].T).view(batch, seq, HEADS, hs).transpose(1, 2)
            k = (xb @ self.wk[l].T).view(batch, seq, KV_HEADS, hs).transpose(1, 2)
            v = (xb @ self.wv[l].T).view(batch, seq, KV_HEADS, hs).transpose(1, 2)
            q, k = rope(q, cos, sin), rope(k, cos, sin)
            # Grouped-query: query head h reads key/value head h // (HEADS / KV_HEADS).
            group = HEADS // KV_HEADS
            k = k.repeat_interleave(group, dim=1)
            v = v.repeat_interleave(group, dim=1)
            att = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # / sqrt(hs)
            x = x + att.transpose(1, 2).reshape(batch, seq, DIM) @ self.wo[l].T
            xb = rmsnorm(x, self.rms_ffn[l])
            x = x + (F.silu(xb @ self.w1[l].T) * (xb @ self.w3[l].T)) @ self.w2[l].T
        # The classifier is the embedding (a positive vocabulary size in the checkpoint).
        return rmsnorm(x, self.rms_final) @ self.embedding.T


def write_checkpoint(path, m):
    """llama2.c's version-0 checkpoint: 7 × i32, then f32 tensors in run.c's order, including
    the two rotary tables run.c skips (written as the cos and sin it computes)."""
    with open(path, "wb") as f:
        f.write(struct.pack("<7i", DIM, HIDDEN, LAYERS, HEADS, KV_HEADS, VOCAB, SEQ_LEN))
        for t in (m.embedding, m.rms_att, m.wq, m.wk, m.wv, m.wo, m.rms_ffn, m.w1, m.w2, m.w3,
                  m.rms_final, m.cos, m.sin):
            f.write(t.detach().float().contiguous().numpy().astype("<f4").tobytes())


# ---------------------------------------------------------------------------------------------


def greedy(model, ids, steps):
    with torch.no_grad():
        for _ in range(steps):
            nxt = int(model(torch.tensor([ids[-SEQ_LEN:]]))[0, -1].argmax())
            if nxt in (1, 2):
                break
            ids = ids + [nxt]
    return ids


def decode(pieces, ids):
    # run.c's decode: a leading space is dropped after BOS; byte tokens are their byte.
    out = b""
    for prev, i in zip([1] + ids, ids):
        if i in (1, 2):
            continue
        m = re.fullmatch(r"<0x([0-9A-F]{2})>", pieces[i])
        piece = bytes([int(m.group(1), 16)]) if m else pieces[i].encode()
        if prev == 1 and piece.startswith(b" "):
            piece = piece[1:]
        out += piece
    return out.decode("utf-8", "replace")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kjv")
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--lr", type=float, default=3e-3)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(2)
    started = time.time()
    log = open(f"{args.out}/train-log.txt", "w")

    def say(msg):
        print(msg, flush=True)
        log.write(msg + "\n")
        log.flush()

    chapters = read_chapters(args.kjv)
    assert len(chapters) == 1189, f"{len(chapters)} chapters: is it the whole KJV?"
    train = [t for i, (_, t) in enumerate(chapters) if i % HELD_OUT_EVERY != 7]
    held = [(n, t) for i, (n, t) in enumerate(chapters) if i % HELD_OUT_EVERY == 7]
    say(f"corpus: {len(chapters)} chapters, {len(train)} for training, {len(held)} held out")

    pieces, scores = train_bpe([" " + t for t in train], VOCAB)
    enc = Encoder(pieces, scores)
    write_tokenizer(f"{args.out}/tok1024.bin", pieces, scores)
    for _, t in held[:3]:  # the chunked encoder is run.c's whole-string encoder
        assert enc.encode(t[:2000], pieces) == enc.encode_whole(t[:2000], pieces)
    say(f"tokenizer: {VOCAB} tokens, {time.time() - started:.0f} s")

    stream = [i for t in train for i in enc.encode(t, pieces)]
    held_ids = [enc.encode(t, pieces) for _, t in held]
    say(f"training tokens {len(stream)}, held-out tokens {sum(map(len, held_ids))}")
    data = torch.tensor(stream)
    with open(f"{args.out}/kjv-heldout.txt", "w") as f:
        for name, t in held:
            f.write(f"{name}\t{t}\n")

    model = Model()
    n_params = sum(p.numel() for p in model.parameters())
    say(f"model: dim {DIM}, hidden {HIDDEN}, layers {LAYERS}, heads {HEADS}, kv heads "
        f"{KV_HEADS}, vocab {VOCAB}, context {SEQ_LEN}, shared classifier; {n_params} parameters")
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": other, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95))
    gen = torch.Generator().manual_seed(args.seed)
    warmup = max(1, args.steps // 20)

    def held_loss(max_seqs=None):
        model.eval()
        total, n = 0.0, 0
        with torch.no_grad():
            for ids in held_ids[:max_seqs]:
                for s in range(0, len(ids) - 1, SEQ_LEN):
                    x = torch.tensor([ids[s : s + SEQ_LEN]])
                    y = torch.tensor([ids[s + 1 : s + SEQ_LEN + 1]])
                    logits = model(x)[:, : y.shape[1]]
                    total += F.cross_entropy(logits[0], y[0], reduction="sum").item()
                    n += y.shape[1]
        model.train()
        return total / n

    for step in range(args.steps):
        lr = args.lr * min(1.0, (step + 1) / warmup)
        lr *= 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / args.steps))  # cosine to 10 %
        for g in opt.param_groups:
            g["lr"] = lr
        starts = torch.randint(0, len(data) - SEQ_LEN - 1, (BATCH,), generator=gen)
        x = torch.stack([data[s : s + SEQ_LEN] for s in starts])
        y = torch.stack([data[s + 1 : s + SEQ_LEN + 1] for s in starts])
        loss = F.cross_entropy(model(x).view(-1, VOCAB), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 100 == 0 or step == args.steps - 1:
            msg = f"step {step} loss {loss.item():.4f} lr {lr:.2e} {time.time() - started:.0f} s"
            if step % 500 == 0 or step == args.steps - 1:
                msg += f" held-out loss {held_loss(10):.4f}"
            say(msg)

    train_seconds = time.time() - started
    write_checkpoint(f"{args.out}/kjv.bin", model)
    ppl = math.exp(held_loss())
    say(f"held-out perplexity (float32, all {len(held)} chapters, windows of {SEQ_LEN}): "
        f"{ppl:.3f}")
    # The Rust tests' slice: the first tokens of each of the first held-out chapters (each
    # sequence one window from BOS, within the context), with PyTorch's perplexity over it.
    slice_ids = [ids[:200] for ids in held_ids[:6]]
    model.eval()
    lp, n = 0.0, 0
    with torch.no_grad():
        for ids in slice_ids:
            logits = model(torch.tensor([ids[:-1]]))[0].double()
            lp += F.log_softmax(logits, -1)[torch.arange(len(ids) - 1), ids[1:]].sum().item()
            n += len(ids) - 1
    slice_ppl = math.exp(-lp / n)
    say(f"held-out slice: {len(slice_ids)} sequences, {n} positions, float perplexity "
        f"{slice_ppl:.4f}")
    for prompt in ["And God said", "In the beginning", "The LORD is my shepherd"]:
        ids = greedy(model, enc.encode(prompt, pieces), 96)
        say(f"greedy after {prompt!r}: {decode(pieces, ids)!r}")
    say(f"training took {train_seconds:.0f} s ({args.steps} steps of {BATCH} × {SEQ_LEN}); "
        f"total {time.time() - started:.0f} s; torch {torch.__version__}, seed {args.seed}")
    with open(f"{args.out}/kjv-heldout.json", "w") as f:
        json.dump({"chapters": [n for n, _ in held[:6]],
                   "texts": [t for _, t in held[:6]],
                   "ids": slice_ids,
                   "positions": n,
                   "float32_perplexity": slice_ppl,
                   "heldout_perplexity": ppl}, f)


if __name__ == "__main__":
    sys.exit(main())
