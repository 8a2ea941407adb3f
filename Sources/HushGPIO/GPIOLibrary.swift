import CGPIOD

/// Facts about the libgpiod hush runs against, for the daemon's banner and bug reports.
public enum GPIOLibrary {
    /// The libgpiod version loaded at run time, e.g. "1.6.3". hush needs the 1.x API.
    public static var version: String { String(cString: gpiod_version_string()) }
}
