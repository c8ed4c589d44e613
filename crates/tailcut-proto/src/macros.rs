//! Small macros shared by the engine crate.

/// A tiny `bitflags`-like macro: enough for one flags type without another dependency.
macro_rules! bitflags_lite {
    ($(#[$m:meta])* pub struct $name:ident: $t:ty { $($flag:ident = $v:expr),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name(pub $t);
        #[allow(dead_code)]
        impl $name {
            $(pub const $flag: $name = $name($v);)*
            pub const fn empty() -> $name { $name(0) }
            pub const fn contains(self, o: $name) -> bool { self.0 & o.0 == o.0 }
            pub const fn union(self, o: $name) -> $name { $name(self.0 | o.0) }
            pub fn insert(&mut self, o: $name) { self.0 |= o.0 }
            pub fn remove(&mut self, o: $name) { self.0 &= !o.0 }
        }
        impl std::ops::BitOr for $name {
            type Output = $name;
            fn bitor(self, o: $name) -> $name { $name(self.0 | o.0) }
        }
    };
}
pub(crate) use bitflags_lite;
