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

/// The software Vulkan driver, for machines without a GPU or its driver.
const LAVAPIPE: Library = lib("", "mesa-vulkan-drivers", "mesa-vulkan-drivers");

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

/// Whether any Vulkan driver is installed: a manifest where the loader looks, or one named by
/// the loader's environment variables.
fn has_vulkan_driver() -> bool {
    let named = ["VK_DRIVER_FILES", "VK_ICD_FILENAMES", "VK_ADD_DRIVER_FILES"]
        .iter()
        .filter_map(std::env::var_os)
        .any(|v| std::env::split_paths(&v).any(|p| p.exists()));
    let dirs = [
        "/usr/share/vulkan/icd.d",
        "/usr/local/share/vulkan/icd.d",
        "/etc/vulkan/icd.d",
    ];
    named
        || dirs.iter().any(|d| {
            std::fs::read_dir(d).is_ok_and(|mut entries| {
                entries.any(|e| e.is_ok_and(|e| e.path().extension().is_some_and(|x| x == "json")))
            })
        })
}

/// What is missing for the window here, with what to install: empty when nothing is.
pub fn diagnose() -> Vec<String> {
    let wayland = std::env::var_os("WAYLAND_DISPLAY").is_some();
    let x11 = std::env::var_os("DISPLAY").is_some();
    let mut problems = Vec::new();
    if !wayland && !x11 {
        problems.push(
            "no display: run ede in an X11 or Wayland session, or under `xvfb-run -a` for \
             --screenshot"
                .to_string(),
        );
    }
    let session: &[Library] = if wayland && !x11 { &WAYLAND } else { &X11 };
    let mut missing: Vec<Library> = session.iter().copied().filter(|l| !loads(l.file)).collect();
    if !loads(VULKAN.file) {
        missing.push(VULKAN);
    }
    if !missing.is_empty() {
        problems.push(format!(
            "missing {} (Debian/Ubuntu: apt-get install {}; Fedora: dnf install {})",
            names(&missing, |l| l.file),
            names(&missing, |l| l.debian).replace(", ", " "),
            names(&missing, |l| l.fedora).replace(", ", " "),
        ));
    }
    if loads(VULKAN.file) && !has_vulkan_driver() {
        problems.push(format!(
            "no Vulkan driver is installed: install your GPU's driver, or Mesa's software one \
             (Debian/Ubuntu: apt-get install {}; Fedora: dnf install {})",
            LAVAPIPE.debian, LAVAPIPE.fedora
        ));
    }
    problems
}

fn names(libs: &[Library], part: impl Fn(&Library) -> &'static str) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for l in libs {
        if !seen.contains(&part(l)) {
            seen.push(part(l));
        }
    }
    seen.join(", ")
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
    fn a_missing_library_is_named_with_its_packages() {
        let libs = [X11[0], X11[1], WAYLAND[2], X11[4]];
        assert_eq!(
            names(&libs, |l| l.debian),
            "libx11-6, libxcursor1, libxkbcommon0"
        );
    }
}
