import CALSA

/// Facts about the alsa-lib hush runs against, for the daemon's banner and bug reports.
package enum ALSALibrary {
    /// The alsa-lib version loaded at run time, e.g. "1.2.8".
    package static var version: String { String(cString: snd_asoundlib_version()) }
    /// The alsa-lib version hush was compiled against.
    package static var headerVersion: String { String(cString: calsa_header_version()) }

    /// Whether alsa-lib prints its own error lines to standard error (it does by default). hushd turns them off
    /// below its debug log level: each failure reaches hush's log once, with its errno, while alsa-lib would print
    /// a line at every retry of a card that is gone ("Cannot get card index for Loopback", four a second).
    package static func printsOwnErrors(_ print: Bool) { calsa_print_library_errors(print ? 1 : 0) }
}
