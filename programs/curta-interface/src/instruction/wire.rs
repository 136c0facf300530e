//! The wire's field types: each reads itself from instruction data in place, writes itself
//! (off chain) and names the type that describes it ([`TypeDoc`]). borsh's encoding: integers
//! little-endian, a byte or u32 list as a u32 count then its items.

use crate::describe::{FieldDoc, TypeDoc};
use crate::run::SeedSource;
#[cfg(not(target_os = "solana"))]
use alloc::vec::Vec;

/// A field of instruction data.
pub trait Wire<'a>: Sized {
    /// How the IDL describes it (and, through [`TypeDoc::size`], the bytes it takes when fixed).
    const TYPE: TypeDoc;
    /// Reads the field at the reader's position and moves past it; `None` when the bytes are
    /// too few or not a value of the type.
    fn read(data: &mut Reader<'a>) -> Option<Self>;
    /// Appends the field's bytes.
    #[cfg(not(target_os = "solana"))]
    fn write(&self, out: &mut Vec<u8>);
}

/// Instruction data and the position of the next field in it.
pub struct Reader<'a> {
    data: &'a [u8],
    at: usize,
    /// Bytes the data is known to hold (checked when the reader was made): the instruction's
    /// tag and its fields of fixed size.
    known: usize,
}

impl<'a> Reader<'a> {
    /// A reader of `data` past its first `at` bytes, or `None` when the data is shorter than
    /// `known` bytes (every instruction's tag and leading fields of fixed size).
    #[inline(always)]
    pub fn new(data: &'a [u8], at: usize, known: usize) -> Option<Self> {
        (data.len() >= known).then_some(Reader { data, at, known })
    }

    /// Whether every byte was read.
    #[inline(always)]
    pub fn is_done(&self) -> bool {
        self.at == self.data.len()
    }

    #[inline(always)]
    fn take<const N: usize>(&mut self) -> Option<&'a [u8; N]> {
        let bytes = self.data.get(self.at..)?.first_chunk::<N>()?;
        self.at += N;
        Some(bytes)
    }

    #[inline(always)]
    fn slice(&mut self, len: u64) -> Option<&'a [u8]> {
        // u64: a count up to u32::MAX times 4 cannot overflow, and is refused on any target.
        let len = usize::try_from(len).ok()?;
        let bytes = self.data.get(self.at..)?.get(..len)?;
        self.at += len;
        Some(bytes)
    }

    /// The little-endian integer of the next `N` (at most 8) bytes.
    ///
    /// The runtime places instruction data at an 8-byte aligned address, but the fields follow
    /// the one-byte tag, at odd offsets: LLVM's BPF backend reads such a field as a byte load and
    /// a shift per byte. A field among the leading fixed ones of aligned data is cut from the
    /// aligned words it spans instead (the parse is inlined: its offset, the words and the
    /// shifts are constants).
    #[inline(always)]
    fn int<const N: usize>(&mut self) -> Option<u64> {
        let at = self.at;
        let bytes = self.take::<N>()?;
        if at + N > self.known || self.data.as_ptr() as usize & 7 != 0 {
            let mut word = [0; 8];
            word[..N].copy_from_slice(bytes);
            return Some(u64::from_le_bytes(word));
        }
        let shift = 8 * (at % 8) as u32;
        let mut value = self.word(at / 8) >> shift;
        if at % 8 + N > 8 {
            value |= self.word(at / 8 + 1) << (64 - shift);
        }
        Some(if N == 8 {
            value
        } else {
            value & ((1 << (8 * N)) - 1)
        })
    }

    /// Word `i` of the known bytes of aligned data, the bytes past them zero.
    #[inline(always)]
    fn word(&self, i: usize) -> u64 {
        if 8 * i + 8 <= self.known {
            let bytes = &self.data[8 * i..8 * i + 8];
            // SAFETY: 8 readable bytes at an 8-byte aligned address (the caller checked the
            // data's alignment). Volatile: a plain load LLVM merges with the byte-wise branch
            // into one unaligned load, which is byte loads again.
            return u64::from_le(unsafe { (bytes.as_ptr() as *const u64).read_volatile() });
        }
        let tail = &self.data[8 * i..self.known];
        let mut word = [0; 8];
        word[..tail.len()].copy_from_slice(tail);
        u64::from_le_bytes(word)
    }
}

macro_rules! integer {
    ($ty:ty, $doc:expr) => {
        impl<'a> Wire<'a> for $ty {
            const TYPE: TypeDoc = $doc;
            #[inline(always)]
            fn read(data: &mut Reader<'a>) -> Option<Self> {
                data.int::<{ core::mem::size_of::<$ty>() }>()
                    .map(|v| v as $ty)
            }
            #[cfg(not(target_os = "solana"))]
            fn write(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    };
}

integer!(u8, TypeDoc::U8);
integer!(u32, TypeDoc::U32);
integer!(u64, TypeDoc::U64);

/// 32 bytes: a hash.
impl<'a> Wire<'a> for &'a [u8; 32] {
    const TYPE: TypeDoc = TypeDoc::Bytes(32);
    #[inline(always)]
    fn read(data: &mut Reader<'a>) -> Option<Self> {
        data.take()
    }
    #[cfg(not(target_os = "solana"))]
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(*self);
    }
}

/// A u32 count, then that many bytes.
impl<'a> Wire<'a> for &'a [u8] {
    const TYPE: TypeDoc = TypeDoc::PrefixedBytes;
    #[inline(always)]
    fn read(data: &mut Reader<'a>) -> Option<Self> {
        let count = u32::read(data)?;
        data.slice(count as u64)
    }
    #[cfg(not(target_os = "solana"))]
    fn write(&self, out: &mut Vec<u8>) {
        (self.len() as u32).write(out);
        out.extend_from_slice(self);
    }
}

/// A list of u32s on the wire (a u32 count, then the items): as parsed, the items' bytes in
/// place; as built (off chain), the caller's values.
#[derive(Clone, Copy, Debug)]
pub enum U32s<'a> {
    /// The items' bytes, 4 per item, little-endian.
    Wire(&'a [u8]),
    #[cfg(not(target_os = "solana"))]
    Values(&'a [u32]),
}

impl<'a> U32s<'a> {
    pub fn len(&self) -> usize {
        match self {
            U32s::Wire(bytes) => bytes.len() / 4,
            #[cfg(not(target_os = "solana"))]
            U32s::Values(values) => values.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The items' wire bytes, as parsed (`None` for values built off chain).
    pub fn wire_bytes(&self) -> Option<&'a [u8]> {
        match *self {
            U32s::Wire(bytes) => Some(bytes),
            #[cfg(not(target_os = "solana"))]
            U32s::Values(_) => None,
        }
    }

    /// The items, in order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + 'a {
        let wire = |bytes: &'a [u8]| bytes.chunks_exact(4).map(|b| curta_core::le::u32_at(b, 0));
        #[cfg(target_os = "solana")]
        let U32s::Wire(bytes) = *self;
        #[cfg(not(target_os = "solana"))]
        let (bytes, values): (&'a [u8], &'a [u32]) = match *self {
            U32s::Wire(bytes) => (bytes, &[]),
            U32s::Values(values) => (&[], values),
        };
        #[cfg(target_os = "solana")]
        return wire(bytes);
        #[cfg(not(target_os = "solana"))]
        wire(bytes).chain(values.iter().copied())
    }
}

impl PartialEq for U32s<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for U32s<'_> {}

impl<'a> Wire<'a> for U32s<'a> {
    const TYPE: TypeDoc = TypeDoc::U32List;
    #[inline(always)]
    fn read(data: &mut Reader<'a>) -> Option<Self> {
        let count = u32::read(data)?;
        data.slice(4 * count as u64).map(U32s::Wire)
    }
    #[cfg(not(target_os = "solana"))]
    fn write(&self, out: &mut Vec<u8>) {
        (self.len() as u32).write(out);
        self.iter().for_each(|item| item.write(out));
    }
}

/// A byte: 0 none, 1 drawn, 2 chosen.
impl<'a> Wire<'a> for SeedSource {
    const TYPE: TypeDoc = TypeDoc::Defined("seed_source");
    #[inline(always)]
    fn read(data: &mut Reader<'a>) -> Option<Self> {
        SeedSource::from_u8(u8::read(data)?)
    }
    #[cfg(not(target_os = "solana"))]
    fn write(&self, out: &mut Vec<u8>) {
        out.push(*self as u8);
    }
}

/// The run a CloseRun names: its model address and nonce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunSeeds<'a> {
    pub model: &'a [u8; 32],
    pub nonce: u32,
}

/// Nothing, or to the end of the data the run's model address and nonce.
impl<'a> Wire<'a> for Option<RunSeeds<'a>> {
    const TYPE: TypeDoc = TypeDoc::RemainderOption(&[
        FieldDoc::new("model", TypeDoc::Pubkey, &[]),
        FieldDoc::new("nonce", TypeDoc::U32, &[]),
    ]);
    #[inline(always)]
    fn read(data: &mut Reader<'a>) -> Option<Self> {
        if data.is_done() {
            return Some(None);
        }
        let model = data.take()?;
        let nonce = u32::read(data)?;
        Some(Some(RunSeeds { model, nonce }))
    }
    #[cfg(not(target_os = "solana"))]
    fn write(&self, out: &mut Vec<u8>) {
        if let Some(RunSeeds { model, nonce }) = self {
            model.write(out);
            nonce.write(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A field reads the same at any offset and width, from aligned data or not, and is refused
    /// past the data's end.
    #[test]
    fn integers_read_the_same_at_any_alignment() {
        #[repr(align(8))]
        struct Aligned([u8; 40]);
        let mut buffer = Aligned([0; 40]);
        for (i, byte) in buffer.0.iter_mut().enumerate() {
            *byte = (i as u8).wrapping_mul(37).wrapping_add(11);
        }
        for len in 1..=20 {
            for at in 0..len {
                let aligned = &buffer.0[..len];
                let mut shifted = [0u8; 41];
                shifted[1..=len].copy_from_slice(aligned);
                let unaligned = &shifted[1..=len];
                assert_eq!(aligned.as_ptr() as usize & 7, 0);
                let expect = |n: usize| {
                    let mut word = [0; 8];
                    word[..n].copy_from_slice(aligned.get(at..at + n)?);
                    Some(u64::from_le_bytes(word))
                };
                for data in [aligned, unaligned] {
                    assert_eq!(
                        Reader::new(data, at, len).unwrap().int::<1>(),
                        expect(1),
                        "{len} {at}"
                    );
                    assert_eq!(
                        Reader::new(data, at, len).unwrap().int::<4>(),
                        expect(4),
                        "{len} {at}"
                    );
                    assert_eq!(
                        Reader::new(data, at, len).unwrap().int::<8>(),
                        expect(8),
                        "{len} {at}"
                    );
                }
            }
        }
    }
}
