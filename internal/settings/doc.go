// Package settings fills a command's flag.FlagSet from layers of
// configuration, in increasing precedence: each flag's default, JSON
// config files (HuJSON: comments and trailing commas; a user's and a
// more specific one merged key by key), an environment variable per flag, and the
// command line; a secret may come from a file named by <VAR>_FILE or a
// "<key>_file" config key. It remembers where each value came from, so a
// command can print the effective configuration with secrets redacted and
// point an error at the file line or variable that caused it. It also
// parses command lines as people type them: flags among the positional
// arguments (ParseArgs), and before a subcommand (SubcommandAt). It knows
// no command's flags and imports nothing of ours but internal packages.
package settings
