/// Declares the instruction list once: the enum [`super::CurtaInstruction`], its in-place
/// parser, its writer (off chain) and its description for the IDL all come from one entry per
/// instruction (tag, variant, fields with their wire types, accounts).
macro_rules! instructions {
    (
        <$lt:lifetime>
        $(
            $(#[doc = $doc:literal])*
            $tag:literal => $variant:ident {
                $( $(#[doc = $fdoc:literal])* $field:ident : $ty:ty ),* $(,)?
            }
            accounts: $accounts:expr,
            remaining: $remaining:expr;
        )*
    ) => {
        /// An instruction's data (docs/program.md, "Instructions"): a u8 tag, then the fields in
        /// order. Parsed in place: nothing is copied or allocated.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum CurtaInstruction<$lt> {
            $(
                $(#[doc = $doc])*
                $variant { $( $(#[doc = $fdoc])* $field: $ty ),* },
            )*
        }

        impl<$lt> CurtaInstruction<$lt> {
            /// Parses instruction data exactly: a truncated or over-long instruction, an unknown
            /// tag, a value out of its range or a count larger than the bytes that follow it is
            /// `None` (the program's `InvalidInstructionData`).
            #[inline(always)]
            pub fn parse(data: &$lt [u8]) -> Option<Self> {
                let (&tag, _) = data.split_first()?;
                match tag {
                    $(
                        $tag => {
                            let known = const {
                                1 + fixed_len(&[$(FieldDoc::new("", <$ty as Wire<$lt>>::TYPE, &[])),*])
                            };
                            #[allow(unused_mut)]
                            let mut rest = Reader::new(data, 1, known)?;
                            let instruction = CurtaInstruction::$variant {
                                $( $field: <$ty as Wire<$lt>>::read(&mut rest)? ),*
                            };
                            rest.is_done().then_some(instruction)
                        }
                    )*
                    _ => None,
                }
            }

            /// The instruction's wire bytes.
            #[cfg(not(target_os = "solana"))]
            pub fn pack(&self) -> alloc::vec::Vec<u8> {
                let mut out = alloc::vec::Vec::new();
                match self {
                    $(
                        CurtaInstruction::$variant { $( $field ),* } => {
                            out.push($tag);
                            $( Wire::write($field, &mut out); )*
                        }
                    )*
                }
                out
            }

            /// Every instruction, in tag order, as the IDL describes it.
            pub const DESCRIPTION: &'static [InstructionDoc] = &[
                $(
                    InstructionDoc {
                        tag: $tag,
                        name: stringify!($variant),
                        docs: &[$($doc),*],
                        args: &[
                            $( FieldDoc::new(stringify!($field), <$ty as Wire<$lt>>::TYPE, &[$($fdoc),*]) ),*
                        ],
                        accounts: $accounts,
                        remaining: $remaining,
                    },
                )*
            ];
        }
    };
}
