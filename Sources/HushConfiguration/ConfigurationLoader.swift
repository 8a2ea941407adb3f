import FoundationEssentials
import HushCore
import HushSystem

#if canImport(Glibc)
import Glibc
#endif

extension HushdConfiguration {
    /// Where hushd reads its configuration when no `--config` is given.
    public static let defaultPath = "/etc/hush/hushd.toml"

    /// Where a board profile named without a path is looked for, in order: the source tree (for `swift run`),
    /// the profiles installed with hush, and the administrator's own.
    public static let boardSearchPath = ["board/profiles", "/usr/share/hush/boards", "/etc/hush/boards"]

    /// Reads and checks the configuration file at `path`, with the board profile it starts from.
    ///
    /// - Throws: every problem found, each with its file and line.
    public static func load(file path: String) throws(ConfigurationError) -> HushdConfiguration {
        let text = try ConfigurationLoader.read(path)
        return try ConfigurationLoader.configuration(text: text, file: path, directory: directory(of: path))
    }

    /// Checks the configuration in `text`; `file` names it in messages, and relative `include` paths are taken
    /// from its directory.
    public static func parse(_ text: String, file: String) throws(ConfigurationError) -> HushdConfiguration {
        try ConfigurationLoader.configuration(text: text, file: file, directory: directory(of: file))
    }

    /// The board profile `nameOrPath`: a name looked up in ``boardSearchPath`` ("pi4-dac-hat"), or a path to a
    /// .toml file.
    public static func board(_ nameOrPath: String) throws(ConfigurationError) -> HushdConfiguration {
        try board(nameOrPath, searchPath: boardSearchPath)
    }

    /// ``board(_:)`` with another search path (tests).
    static func board(_ nameOrPath: String, searchPath: [String]) throws(ConfigurationError) -> HushdConfiguration {
        let path = try ConfigurationLoader.locateBoard(nameOrPath, relativeTo: ".", from: nil, searchPath: searchPath)
        return try load(file: path)
    }

    /// The configuration hushd starts with, from its command line: `--config PATH`, `--board NAME`, or neither —
    /// then ``defaultPath`` when it exists, else ``builtIn``.
    public static func resolve(config: String?, board: String?) throws(ConfigurationError) -> HushdConfiguration {
        switch (config, board) {
        case (let config?, nil): return try load(file: config)
        case (nil, let board?): return try Self.board(board)
        case (nil, nil):
            return access(defaultPath, F_OK) == 0 ? try load(file: defaultPath) : builtIn
        case (let config?, _?):
            throw ConfigurationError(
                ConfigurationProblem(
                    file: config,
                    message: "give --config or --board, not both: start the file with board = \"NAME\" to "
                        + "take a board profile and change some of its keys"
                )
            )
        }
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}

/// Reads configuration files and the board profiles they start from, and lays them over each other.
package enum ConfigurationLoader {
    /// How deep `include` may nest: more is a mistake, not a design.
    static let maximumDepth = 8

    /// The text of `path`, or a problem naming the file and why it cannot be read.
    package static func read(_ path: String) throws(ConfigurationError) -> String {
        func failure(_ message: String) -> ConfigurationError {
            ConfigurationError(ConfigurationProblem(file: path, message: message))
        }
        do throws(TextFile.Failure) {
            // A configuration is a few kilobytes; a huge file is a mistake (or /dev/zero).
            return try TextFile.read(path, limit: 1 << 20, tooLarge: "larger than 1 MiB: is this a configuration file?")
        } catch let problem where problem.errno != 0 {
            throw failure("cannot \(problem.operation) the configuration: \(String(cString: strerror(problem.errno)))")
        } catch let problem {
            throw failure(
                problem.problem == "not UTF-8 text" ? "not UTF-8 text: is this a configuration file?" : problem.problem
            )
        }
    }

    /// The checked configuration in `text`, with the profile it starts from.
    static func configuration(
        text: String,
        file: String,
        directory: String
    ) throws(ConfigurationError)
        -> HushdConfiguration
    {
        var files: [String] = []
        let document = try self.document(text: text, file: file, directory: directory, chain: [], files: &files)
        var configuration = try ConfigurationReader.read(document)
        configuration.files = files
        return configuration
    }

    /// The document in `text` laid over the one it names with `board` or `include`, recursively.
    static func document(
        text: String,
        file: String,
        directory: String,
        chain: [String],
        files: inout [String]
    ) throws(ConfigurationError) -> ConfigurationNode {
        var document = try ConfigurationNode.parse(text, file: file)
        guard var entries = document.table else { return document }
        var base: (key: String, node: ConfigurationNode)?
        if let node = entries["board"] {
            // A string starts from a profile; a table is the [board] section; anything else is a slip.
            switch node.value {
            case .string: base = ("board", node)
            case .table: break
            default:
                throw ConfigurationError(
                    ConfigurationProblem(
                        file: file,
                        line: node.line,
                        key: "board",
                        message: "board = \(node.written): must be a board profile's name or path in quotes "
                            + "(board = \"pi4-dac-hat\"), or a [board] table"
                    )
                )
            }
        }
        if let node = entries["include"] {
            if let board = base {
                throw ConfigurationError(
                    ConfigurationProblem(
                        file: file,
                        line: node.line,
                        key: "include",
                        message: "include = \(node.written): this file already starts from board = "
                            + "\(board.node.written) (line \(board.node.line ?? 0)); use one of them"
                    )
                )
            }
            base = ("include", node)
        }
        guard let (key, node) = base else {
            files.append(file)
            return document
        }
        guard case .string(let name) = node.value, !name.isEmpty else {
            throw ConfigurationError(
                ConfigurationProblem(
                    file: file,
                    line: node.line,
                    key: key,
                    message: "\(key) = \(node.written): must be a board profile's name or a path, in quotes"
                )
            )
        }
        let path: String
        if key == "board" {
            path = try locateBoard(name, relativeTo: directory, from: node)
        } else {
            path = name.hasPrefix("/") ? name : directory + "/" + name
        }
        let identity = canonical(path)
        if chain.contains(identity) || chain.count >= maximumDepth {
            throw ConfigurationError(
                ConfigurationProblem(
                    file: file,
                    line: node.line,
                    key: key,
                    message: "\(key) = \(node.written): "
                        + (chain.contains(identity)
                            ? "\(path) includes itself, through \(chain.joined(separator: " → "))"
                            : "more than \(maximumDepth) files include each other; is this a loop?")
                )
            )
        }
        let baseText: String
        do {
            baseText = try read(path)
        } catch {
            throw ConfigurationError(
                ConfigurationProblem(
                    file: file,
                    line: node.line,
                    key: key,
                    message: "\(key) = \(node.written): cannot read \(path): "
                        + (error.problems.first?.message ?? "\(error)")
                )
            )
        }
        let baseDocument = try self.document(
            text: baseText,
            file: path,
            directory: HushdConfiguration.directory(of: path),
            chain: chain + [canonical(file)],
            files: &files
        )
        files.append(file)
        entries[key] = nil
        document.value = .table(entries)
        return document.merged(over: baseDocument, replacesWhole: replacesWhole)
    }

    /// An input or output that changes its `kind` (or is switched off with `kind = "none"`) replaces the
    /// profile's table instead of merging into it: the old kind's keys would not fit the new one.
    static func replacesWhole(_ path: [String], _ mine: ConfigurationNode, _ base: ConfigurationNode) -> Bool {
        guard path.count == 2, path[0] == "inputs" || path[0] == "outputs",
            case .string(let kind)? = mine.table?["kind"]?.value
        else { return false }
        guard case .string(let baseKind)? = base.table?["kind"]?.value else { return true }
        return kind != baseKind || kind == "none"
    }

    /// The file a `board` value names: a path (it has a "/" or ends in ".toml") or a name in the search path.
    static func locateBoard(
        _ name: String,
        relativeTo directory: String,
        from node: ConfigurationNode?,
        searchPath: [String] = HushdConfiguration.boardSearchPath
    ) throws(ConfigurationError) -> String {
        if name.contains("/") || name.hasSuffix(".toml") {
            let path = name.hasPrefix("/") || directory == "." ? name : directory + "/" + name
            guard access(path, F_OK) == 0 else {
                throw boardProblem(node, name, "no board profile at \(path)")
            }
            return path
        }
        let candidates = searchPath.map { "\($0)/\(name).toml" }
        if let path = candidates.first(where: { access($0, F_OK) == 0 }) { return path }
        let known = Set(
            searchPath.flatMap { directory in
                ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
                    .filter { $0.hasSuffix(".toml") }.map { String($0.dropLast(".toml".count)) }
            }
        ).sorted()
        var message = "no board profile '\(name)' (looked for \(candidates.joined(separator: ", ")))"
        if let suggestion = Suggestion.closest(to: name, in: known) {
            message += "; did you mean '\(suggestion)'?"
        } else if !known.isEmpty {
            message += "; profiles there: \(known.joined(separator: ", "))"
        }
        throw boardProblem(node, name, message)
    }

    private static func boardProblem(
        _ node: ConfigurationNode?,
        _ name: String,
        _ message: String
    )
        -> ConfigurationError
    {
        guard let node else { return ConfigurationError(ConfigurationProblem(file: name, message: message)) }
        return ConfigurationError(
            ConfigurationProblem(
                file: node.file,
                line: node.line,
                key: "board",
                message: "board = \(node.written): \(message)"
            )
        )
    }

    /// The path with symbolic links and "." resolved, to recognise a file that includes itself.
    static func canonical(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
