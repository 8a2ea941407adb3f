import CGPIOD

/// Facts about the libgpiod hush runs against, for the daemon's banner and bug reports.
package enum GPIOLibrary {
    /// The libgpiod version loaded at run time, e.g. "1.6.3" (bookworm) or "2.2.1" (trixie).
    package static var version: String { String(cString: hush_gpio_library_version()) }

    /// The libgpiod API generation this build of hush was compiled against: 1 (libgpiod 1.6) or 2 (libgpiod 2.x),
    /// chosen by the header pkg-config's "libgpiod" points at (Sources/CGPIOD/shim.h).
    package static var apiGeneration: Int { Int(HUSH_GPIOD_API) }
}
