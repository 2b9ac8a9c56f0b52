//! Host-only (feature `abi-bridge`): the slots of a DDI table as machine words, so that a
//! table can be carried across a boundary where the other side's code is not callable as a
//! host function — the simulated OS running `rvgpu.sys` in an x86-64 emulator.
//!
//! Every DDI and callback of the tables takes integers and pointers only (structures larger
//! than a register are passed by pointer in both the Windows x64 and the System V calling
//! convention), so a call is fully described by its argument words and one return word. Each
//! slot type gets:
//! - [`AbiSlot::forwarder`]: a host function of exactly the slot's type that turns its
//!   arguments into words and hands them to a [`Callee`] with the slot's index (the simulated
//!   OS then runs the image's code for that slot);
//! - [`AbiSlot::call_words`]: the opposite direction, calling the host function in a slot with
//!   arguments given as words (the image calling a simulated-OS callback).
//!
//! The tables' `visit_slots` hands each slot with its index to a [`SlotVisitor`].

use core::ffi::c_void;

/// A value that travels in one general-purpose register.
pub trait Word: Copy {
    /// The register's contents for this value (zero- or sign-extended).
    fn to_word(self) -> u64;
    /// The value a callee of this type sees in a register holding `w` (its low bits).
    fn from_word(w: u64) -> Self;
}

macro_rules! int_word {
    ($($t:ty),*) => {$(
        impl Word for $t {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_possible_wrap)]
            fn to_word(self) -> u64 {
                self as u64
            }
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_possible_wrap)]
            fn from_word(w: u64) -> Self {
                w as $t
            }
        }
    )*};
}
int_word!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);

macro_rules! pointer_word {
    ($($mutability:ident),*) => {$(
        impl<T> Word for *$mutability T {
            fn to_word(self) -> u64 {
                self as usize as u64
            }
            #[allow(clippy::cast_possible_truncation)]
            fn from_word(w: u64) -> Self {
                w as usize as *$mutability T
            }
        }
    )*};
}
pointer_word!(mut, const);

impl Word for crate::basic::LARGE_INTEGER {
    #[allow(clippy::cast_sign_loss)]
    fn to_word(self) -> u64 {
        // SAFETY: every member of the union is a plain integer view of the same 8 bytes.
        (unsafe { self.QuadPart }) as u64
    }
    #[allow(clippy::cast_possible_wrap)]
    fn from_word(w: u64) -> Self {
        Self { QuadPart: w as i64 }
    }
}

/// A return type: a [`Word`] or nothing.
pub trait RetWord {
    /// The return register for this value.
    fn to_word(self) -> u64;
    /// The value a caller of this type reads from a return register holding `w`.
    fn from_word(w: u64) -> Self;
}

impl<T: Word> RetWord for T {
    fn to_word(self) -> u64 {
        Word::to_word(self)
    }
    fn from_word(w: u64) -> Self {
        Word::from_word(w)
    }
}

impl RetWord for () {
    fn to_word(self) -> u64 {
        0
    }
    fn from_word(_: u64) {}
}

/// Where a [`AbiSlot::forwarder`] sends its call: slot `id` with its argument words; returns
/// the return word.
pub trait Callee {
    /// Runs slot `id` with `args`.
    fn call(id: usize, args: &[u64]) -> u64;
}

/// A pointer-sized slot of a DDI table.
pub trait AbiSlot: Sized + Copy {
    /// Whether the slot holds a function (a reserved `PVOID` does not).
    const CALLABLE: bool;
    /// The slot's value as an address (0: null).
    fn addr(&self) -> usize;
    /// A slot holding `addr` unchanged (another machine's code address, never called here).
    ///
    /// # Safety
    /// The result must never be called as a host function.
    unsafe fn from_addr(addr: usize) -> Self;
    /// A host function of this slot's type that forwards every call to `C::call(ID, …)`
    /// (null for a slot that is not [`Self::CALLABLE`]).
    fn forwarder<C: Callee, const ID: usize>() -> Self;
    /// Calls the host function in the slot with `args` (missing ones are 0); `None` for a null
    /// or reserved slot.
    ///
    /// # Safety
    /// The slot must hold a host function, sound to call with these arguments.
    unsafe fn call_words(&self, args: &[u64]) -> Option<u64>;
}

impl AbiSlot for *mut c_void {
    const CALLABLE: bool = false;
    fn addr(&self) -> usize {
        *self as usize
    }
    unsafe fn from_addr(addr: usize) -> Self {
        addr as *mut c_void
    }
    fn forwarder<C: Callee, const ID: usize>() -> Self {
        core::ptr::null_mut()
    }
    unsafe fn call_words(&self, _args: &[u64]) -> Option<u64> {
        None
    }
}

fn arg(args: &[u64], i: usize) -> u64 {
    args.get(i).copied().unwrap_or(0)
}

macro_rules! fn_slot {
    ($($a:ident $i:tt),*) => {
        impl<R: RetWord $(, $a: Word)*> AbiSlot for Option<unsafe extern "system" fn($($a),*) -> R> {
            const CALLABLE: bool = true;
            fn addr(&self) -> usize {
                self.map_or(0, |f| f as usize)
            }
            unsafe fn from_addr(addr: usize) -> Self {
                if addr == 0 {
                    None
                } else {
                    // SAFETY: a non-null address has the size and validity of a function
                    // pointer; the caller never calls it as a host function.
                    Some(unsafe {
                        core::mem::transmute::<usize, unsafe extern "system" fn($($a),*) -> R>(addr)
                    })
                }
            }
            fn forwarder<C: Callee, const ID: usize>() -> Self {
                #[allow(non_snake_case)]
                unsafe extern "system" fn forward<C: Callee, const ID: usize, R: RetWord $(, $a: Word)*>(
                    $($a: $a),*
                ) -> R {
                    R::from_word(C::call(ID, &[$(Word::to_word($a)),*]))
                }
                Some(forward::<C, ID, R $(, $a)*>)
            }
            unsafe fn call_words(&self, _args: &[u64]) -> Option<u64> {
                let f = (*self)?;
                // SAFETY: the caller guarantees the slot holds a host function that is sound
                // to call with these arguments.
                Some(unsafe { f($(<$a as Word>::from_word(arg(_args, $i))),*) }.to_word())
            }
        }

        /// A function pointer passed as an argument (a routine a callback calls back): its
        /// address. The receiving side decides whether it may be called as a host function.
        impl<R: RetWord $(, $a: Word)*> Word for Option<unsafe extern "system" fn($($a),*) -> R> {
            fn to_word(self) -> u64 {
                self.map_or(0, |f| f as usize as u64)
            }
            #[allow(clippy::cast_possible_truncation)]
            fn from_word(w: u64) -> Self {
                // SAFETY: as `from_addr`: a non-null address is a valid function-pointer value;
                // whether it may be called is the receiver's business.
                unsafe { <Self as AbiSlot>::from_addr(w as usize) }
            }
        }
    };
}
fn_slot!();
fn_slot!(A0 0);
fn_slot!(A0 0, A1 1);
fn_slot!(A0 0, A1 1, A2 2);
fn_slot!(A0 0, A1 1, A2 2, A3 3);
fn_slot!(A0 0, A1 1, A2 2, A3 3, A4 4);
fn_slot!(A0 0, A1 1, A2 2, A3 3, A4 4, A5 5);
fn_slot!(A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6);
fn_slot!(A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7);

/// Visits the slots of a table (`visit_slots`), each with its index in header order.
pub trait SlotVisitor {
    /// Slot number `ID`.
    fn visit<const ID: usize, S: AbiSlot>(&mut self, slot: &mut S);
}

/// Index of `name` in `names`, `None` for a name that is not there. A constant index is
/// [`slot_id!`](crate::slot_id), which makes an unknown name a compile error.
pub const fn slot_index(names: &[&str], name: &str) -> Option<usize> {
    let mut i = 0;
    while i < names.len() {
        if crate::catalog::str_eq(names[i], name) {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// The index of slot `name` in a table's `names` as a constant: evaluated in a `const` block,
/// so an unknown name fails the build and nothing is left to fail at run time.
#[macro_export]
macro_rules! slot_id {
    ($names:expr, $name:expr) => {
        const {
            match $crate::abi::slot_index($names, $name) {
                Some(i) => i,
                None => panic!("unknown slot"),
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::slot_index;

    /// A name looked up at run time is found at its index, or is `None`: no panic.
    #[test]
    fn slot_index_at_run_time_is_an_option() {
        let names = ["DxgkDdiAddDevice", "DxgkDdiStartDevice"];
        let known = std::hint::black_box(String::from("DxgkDdiStartDevice"));
        let unknown = std::hint::black_box(String::from("DxgkDdiNoSuchSlot"));
        assert_eq!(slot_index(&names, &known), Some(1));
        assert_eq!(slot_index(&names, &unknown), None);
        assert_eq!(slot_index(&[], &known), None);
        assert_eq!(crate::slot_id!(&["a", "b"], "b"), 1);
    }
}
