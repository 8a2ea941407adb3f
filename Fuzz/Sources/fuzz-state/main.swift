import FuzzSupport
import HushCore
import HushConfiguration

// The state file (/var/lib/hush/state) as StateStore.load reads it: at most 64 KiB of UTF-8, decoded once with
// any route accepted and once with the virtual board's routes.
//
// Properties beyond "no crash": volumes that decode encode to a file that decodes to the same volumes; a refused
// file gets a problem that names the file and, when it names a line, one the file has.

let path = "/var/lib/hush/state"
let boardRoutes: Set<Route> = [.speaker, .headphones]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzState(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = bytes(data, size)
    // StateFileIO.read sets aside what is not UTF-8 or larger than 64 KiB before decode sees it.
    guard input.count <= 64 * 1024, let text = String(validating: input, as: UTF8.self) else { return 0 }
    let lines = lineCount(text)
    for routes in [nil, boardRoutes] {
        let volumes: PersistedVolumes
        do {
            volumes = try StateStore.decode(text, path: path, knownRoutes: routes)
        } catch {
            require(error.path == path, "a problem names '\(error.path)'", input: input)
            require(!error.problem.isEmpty, "a problem without words", input: input)
            if let line = error.line {
                require((1...lines).contains(line), "a problem on line \(line) of \(lines): \(error)", input: input)
            }
            continue
        }
        if let routes {
            require(
                volumes.system.keys.allSatisfy(routes.contains) && volumes.routeOverride.map(routes.contains) ?? true,
                "volumes for a route the board does not have: \(volumes)",
                input: input
            )
        }
        let encoded = StateStore.encode(volumes)
        do {
            let again = try StateStore.decode(encoded, path: path, knownRoutes: routes)
            require(again == volumes, "\(volumes) written as\n\(encoded)\nreads back as \(again)", input: input)
        } catch {
            finding("\(volumes) written as\n\(encoded)\nis refused: \(error)", input: input)
        }
    }
    return 0
}
