import CALSA

/// Facts about the alsa-lib hush runs against, for the daemon's banner and bug reports.
public enum ALSALibrary {
    /// The alsa-lib version loaded at run time, e.g. "1.2.8".
    public static var version: String { String(cString: snd_asoundlib_version()) }
    /// The alsa-lib version hush was compiled against.
    public static var headerVersion: String { String(cString: calsa_header_version()) }
}
