import CSamplerate
import CSndfile

/// Facts about the decoding and rate-conversion libraries, for the daemon's banner and bug reports.
public enum AudioFileLibraries {
    /// e.g. "libsndfile-1.2.0".
    public static var sndfileVersion: String { String(cString: hush_sf_version_string()) }
    /// e.g. "libsamplerate-0.2.2 (c) ...".
    public static var samplerateVersion: String { String(cString: src_get_version()) }
}
