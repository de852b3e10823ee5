//! Which supported platform this build is for, and the names that follow from it.

/// The release target this build is for: the name of its archive and of its line in the
/// plugin's `dist.lock`, and the key of its pinned model downloads (`model::downloads`).
pub const TARGET: &str = if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
    "x86_64-unknown-linux-gnu"
} else if cfg!(all(target_os = "linux", target_arch = "aarch64")) {
    "aarch64-unknown-linux-gnu"
} else if cfg!(all(target_os = "macos", target_arch = "aarch64")) {
    "aarch64-apple-darwin"
} else if cfg!(all(target_os = "macos", target_arch = "x86_64")) {
    "x86_64-apple-darwin"
} else if cfg!(all(windows, target_arch = "x86_64")) {
    // One Windows archive, whichever toolchain built it (the release's native MSVC build or the
    // cross build's MinGW one): the programs, the model and ONNX Runtime's DLL are the same.
    "x86_64-pc-windows-msvc"
} else {
    "unsupported"
};

/// The ONNX Runtime library's file name, as the model wheels and release archives carry it.
pub const ORT_LIB: &str = if cfg!(target_os = "macos") {
    "libonnxruntime.dylib"
} else if cfg!(windows) {
    "onnxruntime.dll"
} else {
    "libonnxruntime.so"
};

/// What `uname -m` says on this machine's kind (for messages about a library of another).
pub const ARCH: &str = std::env::consts::ARCH;

/// The kind of machine code in a file, from its header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binary {
    /// "Linux" (ELF), "macOS" (Mach-O) or "Windows" (PE).
    pub system: &'static str,
    /// Each machine it has code for (a universal Mach-O has several), as `std::env::consts::ARCH`
    /// names them.
    pub machines: Vec<&'static str>,
}

/// This build's system, as [`Binary::system`] names it.
pub const SYSTEM: &str = if cfg!(target_os = "macos") {
    "macOS"
} else if cfg!(windows) {
    "Windows"
} else {
    "Linux"
};

/// How much of a file's start [`binary_kind`] reads: an ELF header's machine is at byte 18, a
/// universal Mach-O lists up to 16 machines in its first 328 bytes, and a PE file's header
/// follows its DOS stub (at 0x40 to 0x100 in every linker's output). (The hook's front asks this
/// of the ONNX Runtime library on every event: one small read.)
const HEADER_BYTES: usize = 512;

/// The machine code in the file at `path`: `None` when it is not ELF, Mach-O or PE (a script)
/// or cannot be read.
pub fn binary_kind(path: &std::path::Path) -> Option<Binary> {
    use std::io::Read;
    let mut head = Vec::with_capacity(HEADER_BYTES);
    std::fs::File::open(path)
        .ok()?
        .take(HEADER_BYTES as u64)
        .read_to_end(&mut head)
        .ok()?;
    parse_header(&head)
}

fn parse_header(head: &[u8]) -> Option<Binary> {
    let u16_at = |at: usize, little: bool| {
        let b: [u8; 2] = head.get(at..at + 2)?.try_into().ok()?;
        Some(if little {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        })
    };
    let u32_at = |at: usize, little: bool| {
        let b: [u8; 4] = head.get(at..at + 4)?.try_into().ok()?;
        Some(if little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    };
    if head.starts_with(b"\x7fELF") {
        let little = *head.get(5)? == 1;
        let machine = match u16_at(18, little)? {
            62 => "x86_64",
            183 => "aarch64",
            3 => "x86",
            40 => "arm",
            _ => "unknown",
        };
        return Some(Binary {
            system: "Linux",
            machines: vec![machine],
        });
    }
    if head.starts_with(b"MZ") {
        // A DOS header whose last field (at 0x3c) is where the PE header starts.
        let at = u32_at(0x3c, true)? as usize;
        if head.get(at..at + 4)? != b"PE\0\0" {
            return None;
        }
        let machine = match u16_at(at + 4, true)? {
            0x8664 => "x86_64",
            0xaa64 => "aarch64",
            0x014c => "x86",
            _ => "unknown",
        };
        return Some(Binary {
            system: "Windows",
            machines: vec![machine],
        });
    }
    let mach_cpu = |cpu: u32| match cpu {
        0x0100_0007 => "x86_64",
        0x0100_000c => "aarch64",
        7 => "x86",
        12 => "arm",
        _ => "unknown",
    };
    match u32_at(0, false)? {
        // Mach-O, 64 or 32 bits, stored little-endian (every Mac this century).
        0xcffa_edfe | 0xcefa_edfe => Some(Binary {
            system: "macOS",
            machines: vec![mach_cpu(u32_at(4, true)?)],
        }),
        // Universal: a big-endian table of the machines it holds.
        0xcafe_babe => {
            let count = u32_at(4, false)?.min(16) as usize;
            let machines = (0..count)
                .map(|i| u32_at(8 + 20 * i, false).map(mach_cpu))
                .collect::<Option<Vec<_>>>()?;
            Some(Binary {
                system: "macOS",
                machines,
            })
        }
        _ => None,
    }
}

/// Can this process load or run the binary at `path`? `Err` is the end of a sentence saying
/// what it is built for instead ("built for Linux x86_64, and this is Linux aarch64"). A file
/// that is not machine code at all (a script) passes: the system decides.
pub fn check_native(path: &std::path::Path) -> Result<(), String> {
    let Some(binary) = binary_kind(path) else {
        return Ok(());
    };
    if binary.system == SYSTEM && binary.machines.contains(&ARCH) {
        return Ok(());
    }
    Err(format!(
        "built for {} {}, and this is {SYSTEM} {ARCH}",
        binary.system,
        binary.machines.join("+")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elf(machine: u16) -> Vec<u8> {
        let mut h = b"\x7fELF\x02\x01\x01".to_vec();
        h.resize(18, 0);
        h.extend_from_slice(&machine.to_le_bytes());
        h
    }

    #[test]
    fn headers_name_their_system_and_machines() {
        assert_eq!(parse_header(&elf(62)).unwrap().machines, ["x86_64"]);
        assert_eq!(parse_header(&elf(183)).unwrap().machines, ["aarch64"]);
        let mut macho = 0xfeed_facf_u32.to_le_bytes().to_vec();
        macho.extend_from_slice(&0x0100_000c_u32.to_le_bytes());
        let arm_mac = parse_header(&macho).unwrap();
        assert_eq!(
            (arm_mac.system, arm_mac.machines),
            ("macOS", vec!["aarch64"])
        );
        let mut fat = 0xcafe_babe_u32.to_be_bytes().to_vec();
        fat.extend_from_slice(&2u32.to_be_bytes());
        for cpu in [0x0100_0007_u32, 0x0100_000c] {
            fat.extend_from_slice(&cpu.to_be_bytes());
            fat.extend_from_slice(&[0; 16]);
        }
        assert_eq!(parse_header(&fat).unwrap().machines, ["x86_64", "aarch64"]);
        let mut pe = b"MZ".to_vec();
        pe.resize(0x3c, 0);
        pe.extend_from_slice(&0x80u32.to_le_bytes());
        pe.resize(0x80, 0);
        pe.extend_from_slice(b"PE\0\0");
        pe.extend_from_slice(&0x8664u16.to_le_bytes());
        let windows = parse_header(&pe).unwrap();
        assert_eq!(
            (windows.system, windows.machines),
            ("Windows", vec!["x86_64"])
        );
        pe[0x80] = b'X';
        assert_eq!(parse_header(&pe), None, "an MZ stub without a PE header");
        assert_eq!(parse_header(b"#!/bin/sh\necho hi\n"), None);
    }

    #[test]
    fn a_binary_of_another_machine_is_named_and_this_one_passes() {
        let dir = tempfile::tempdir().unwrap();
        let other = if ARCH == "aarch64" { 62 } else { 183 };
        let path = dir.path().join("lib.so");
        std::fs::write(&path, elf(other)).unwrap();
        let why = check_native(&path).unwrap_err();
        assert!(
            why.contains(&format!("and this is {SYSTEM} {ARCH}")),
            "{why}"
        );
        assert!(check_native(&std::env::current_exe().unwrap()).is_ok());
        std::fs::write(&path, "#!/bin/sh\n").unwrap();
        assert!(check_native(&path).is_ok());
    }
}
