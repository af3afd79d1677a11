//! The system libraries the window opens at run time, named with their packages where one is
//! missing. winit and wgpu load them with `dlopen` when the window starts, so a wheel or a
//! binary links none of them and a machine without them fails only then, with an error that
//! names no library ("Failed to create surface for any enabled backend"). The analyses' CPU
//! paths, and every subcommand but the viewer, need none of them.

/// One library the window may open, and the packages that provide it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Library {
    /// The file `dlopen` asks for.
    pub file: &'static str,
    /// The package on Debian and Ubuntu.
    pub debian: &'static str,
    /// The package on Fedora and RHEL.
    pub fedora: &'static str,
}

const fn lib(file: &'static str, debian: &'static str, fedora: &'static str) -> Library {
    Library {
        file,
        debian,
        fedora,
    }
}

/// What an X11 session needs (winit's X11 backend loads every one of them).
pub const X11: [Library; 6] = [
    lib("libX11.so.6", "libx11-6", "libX11"),
    lib("libXcursor.so.1", "libxcursor1", "libXcursor"),
    lib("libXrandr.so.2", "libxrandr2", "libXrandr"),
    lib("libXi.so.6", "libxi6", "libXi"),
    lib("libxkbcommon.so.0", "libxkbcommon0", "libxkbcommon"),
    lib(
        "libxkbcommon-x11.so.0",
        "libxkbcommon-x11-0",
        "libxkbcommon-x11",
    ),
];

/// What a Wayland session needs.
pub const WAYLAND: [Library; 3] = [
    lib(
        "libwayland-client.so.0",
        "libwayland-client0",
        "libwayland-client",
    ),
    lib(
        "libwayland-cursor.so.0",
        "libwayland-cursor0",
        "libwayland-cursor",
    ),
    lib("libxkbcommon.so.0", "libxkbcommon0", "libxkbcommon"),
];

/// The Vulkan loader: wgpu's first choice, and the only backend ede's compute shaders run on
/// everywhere (its OpenGL fallback draws the window but may refuse them).
pub const VULKAN: Library = lib("libvulkan.so.1", "libvulkan1", "vulkan-loader");

/// Whether `file` can be loaded here.
pub fn loads(file: &str) -> bool {
    let Ok(name) = std::ffi::CString::new(file) else {
        return false;
    };
    // SAFETY: a NUL-terminated name; the handle is closed at once and no symbol is taken.
    // Loading runs the library's initialisers, as winit's own dlopen of it would.
    unsafe {
        let handle = libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL);
        if handle.is_null() {
            return false;
        }
        libc::dlclose(handle);
    }
    true
}

/// Whether any Vulkan driver is installed: a manifest where the loader looks. Where
/// `VK_DRIVER_FILES` (or the older `VK_ICD_FILENAMES`) names manifests, the loader looks only
/// there.
fn has_vulkan_driver() -> bool {
    let exists = |v: std::ffi::OsString| std::env::split_paths(&v).any(|p| p.exists());
    let only = ["VK_DRIVER_FILES", "VK_ICD_FILENAMES"].map(std::env::var_os);
    if only.iter().any(Option::is_some) {
        return only.into_iter().flatten().any(exists);
    }
    let dirs = [
        "/usr/share/vulkan/icd.d",
        "/usr/local/share/vulkan/icd.d",
        "/etc/vulkan/icd.d",
    ];
    std::env::var_os("VK_ADD_DRIVER_FILES").is_some_and(exists)
        || dirs.iter().any(|d| {
            std::fs::read_dir(d).is_ok_and(|mut entries| {
                entries.any(|e| e.is_ok_and(|e| e.path().extension().is_some_and(|x| x == "json")))
            })
        })
}

/// The display a window would open on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Display {
    None,
    X11,
    Wayland,
}

impl Display {
    /// This session's, as winit chooses it: Wayland where only Wayland is named.
    pub fn here() -> Self {
        let wayland = std::env::var_os("WAYLAND_DISPLAY").is_some();
        match (std::env::var_os("DISPLAY").is_some(), wayland) {
            (true, _) => Self::X11,
            (false, true) => Self::Wayland,
            (false, false) => Self::None,
        }
    }
}

/// What is missing here for the window, with what to install: empty when nothing is.
pub fn diagnose() -> Vec<String> {
    let mut problems = display_problems(Display::here(), &loads);
    problems.extend(vulkan_problem_here());
    problems
}

/// `vulkan_problem` on this machine.
pub fn vulkan_problem_here() -> Option<String> {
    vulkan_problem(&loads, has_vulkan_driver())
}

/// What `display` lacks, given which libraries load.
fn display_problems(display: Display, loads: &dyn Fn(&str) -> bool) -> Vec<String> {
    let libraries: &[Library] = match display {
        Display::None => {
            return vec![
                "no display: run ede in an X11 or Wayland session, or under `xvfb-run -a` for \
                 --screenshot"
                    .to_string(),
            ];
        }
        Display::X11 => &X11,
        Display::Wayland => &WAYLAND,
    };
    let missing: Vec<Library> = libraries
        .iter()
        .copied()
        .filter(|l| !loads(l.file))
        .collect();
    missing
        .first()
        .map(|_| install(&missing))
        .into_iter()
        .collect()
}

/// Why the compute shaders have no Vulkan device here, if they have none: no loader, or no
/// driver for it.
fn vulkan_problem(loads: &dyn Fn(&str) -> bool, driver: bool) -> Option<String> {
    if !loads(VULKAN.file) {
        return Some(install(&[VULKAN]));
    }
    (!driver).then(|| {
        "no Vulkan driver: install the GPU's, or Mesa's software one (Debian/Ubuntu: apt-get \
         install mesa-vulkan-drivers; Fedora: dnf install mesa-vulkan-drivers)"
            .to_string()
    })
}

/// "missing FILES (Debian/Ubuntu: apt-get install PACKAGES; Fedora: dnf install PACKAGES)".
fn install(missing: &[Library]) -> String {
    let names = |part: fn(&Library) -> &'static str| {
        let mut seen: Vec<&str> = Vec::new();
        for name in missing.iter().map(part) {
            if !seen.contains(&name) {
                seen.push(name);
            }
        }
        seen
    };
    format!(
        "missing {} (Debian/Ubuntu: apt-get install {}; Fedora: dnf install {})",
        names(|l| l.file).join(", "),
        names(|l| l.debian).join(" "),
        names(|l| l.fedora).join(" "),
    )
}

/// The window's start-up error `e`, with what is missing here to explain it.
pub fn explain(e: &str) -> String {
    let problems = diagnose();
    if problems.is_empty() {
        return e.to_string();
    }
    format!("{e}\n  {}", problems.join("\n  "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libc_loads_and_a_made_up_library_does_not() {
        assert!(loads("libc.so.6"));
        assert!(!loads("libede-no-such-library.so.9"));
        assert!(!loads("nul\0inside"));
    }

    #[test]
    fn what_is_missing_is_named_with_its_packages() {
        let all = |_: &str| true;
        assert!(display_problems(Display::X11, &all).is_empty());
        assert!(display_problems(Display::None, &all)[0].starts_with("no display"));
        let no_x11 = |f: &str| f != "libX11.so.6" && f != "libxkbcommon.so.0";
        assert_eq!(
            display_problems(Display::X11, &no_x11),
            [
                "missing libX11.so.6, libxkbcommon.so.0 (Debian/Ubuntu: apt-get install libx11-6 \
              libxkbcommon0; Fedora: dnf install libX11 libxkbcommon)"
            ]
        );
        // Wayland needs none of X11's.
        assert!(display_problems(Display::Wayland, &|f: &str| !f.starts_with("libX")).is_empty());
        assert_eq!(vulkan_problem(&all, true), None);
        let no_loader = vulkan_problem(&|f: &str| f != "libvulkan.so.1", true).unwrap();
        assert!(no_loader.contains("libvulkan1") && no_loader.contains("vulkan-loader"));
        assert!(
            vulkan_problem(&all, false)
                .unwrap()
                .contains("mesa-vulkan-drivers")
        );
    }
}
