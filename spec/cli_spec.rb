# frozen_string_literal: true

require "spec_helper"
require "open3"
require "pty"
require "rbconfig"
require "llm_failover/cli/demo"
require "llm_failover/cli/tools_demo"
require "llm_failover/cli/hosts_demo"

# The command, run as a subprocess. Chat talks to FakeProviders started in this
# process through --base-url: no key of a real provider, no network.
RSpec.describe "exe/llm_failover", :ruby_only do
  root = File.expand_path("..", __dir__)
  exe = File.join(root, "exe", "llm_failover")
  key = "sk-cli-SECRET-7531"

  # Keys a developer may have set must never reach a subprocess that could then call
  # the real APIs.
  clean_env = { "OPENAI_API_KEY" => nil, "ANTHROPIC_API_KEY" => nil, "NO_COLOR" => nil, "LF_CLI_KEY" => key }

  # The spec process runs under Bundler; its environment carries that to the child.
  define_method(:cli) do |*args, env: {}, stdin_data: ""|
    out, err, status = Open3.capture3(clean_env.merge(env), RbConfig.ruby, exe, *args,
                                      stdin_data: stdin_data, chdir: root)
    [out, err, status.exitstatus]
  end

  # Output of the command under a pseudo-terminal, and its exit code. The terminal is
  # this spec's own, which shows colors, whatever TERM the suite runs under (a CI's may
  # be dumb).
  define_method(:cli_on_tty) do |*args, env: {}|
    output = +""
    code = nil
    PTY.spawn(clean_env.merge("TERM" => "xterm-256color", **env), RbConfig.ruby, exe, *args,
              chdir: root) do |reader, _writer, pid|
      begin
        loop { output << reader.readpartial(4096) }
      rescue EOFError, Errno::EIO
        nil # the child closed the terminal
      end
      code = Process.wait2(pid)[1].exitstatus
    end
    [output, code]
  end

  def no_backtrace(text)
    expect(text).not_to match(/\.rb:\d+:in /)
    expect(text).not_to match(/^\s+from /)
  end

  describe "help and usage" do
    it "prints the version" do
      out, err, code = cli("--version")
      expect([out, err, code]).to eq(["llm_failover #{LlmFailover::VERSION}\n", "", 0])
    end

    it "lists the commands on help and the chat options on help chat" do
      out, _, code = cli("help")
      expect(code).to eq(0)
      expect(out).to include("demo", "chat", "report", "Exit codes")

      out, _, code = cli("chat", "--help")
      expect(code).to eq(0)
      expect(out).to include("--backup-model", "--base-url", "--api-key-env", "--[no-]stream")
    end

    it "exits 2 with the usage on stderr when no command is given" do
      out, err, code = cli
      expect([out, code]).to eq(["", 2])
      expect(err).to include("Usage: llm_failover COMMAND")
    end

    it "rejects an unknown command in one line, without a backtrace" do
      out, err, code = cli("frobnicate")
      expect([out, code]).to eq(["", 2])
      expect(err.lines.size).to eq(1)
      expect(err).to include('unknown command "frobnicate"')
      no_backtrace(err)
    end
  end

  describe "demo" do
    # Its output, run as the README and CI run it; it must exit 0 with nothing on stderr.
    define_method(:demo) do |*args|
      out, err, status = Open3.capture3(clean_env, "bundle", "exec", "exe/llm_failover", "demo", *args, chdir: root)
      expect(status.exitstatus).to eq(0), err
      expect(err).to eq("")
      out
    end

    # The primary's partial words, one reset, then the backup's answer alone: nothing of
    # the primary's welded onto it.
    def expect_reset(out, scene)
      marker = "\n#{LlmFailover::CLI::RESET_MARKER}\n"
      expect(out.scan(marker).size).to eq(1)
      before, after = out.split(marker, 2)
      partial = before.lines.last
      expect(partial).not_to be_empty
      expect(scene::PRIMARY_TEXT).to start_with(partial)
      expect(partial.length).to be < scene::PRIMARY_TEXT.length
      expect(after.split("\n\n", 2).first).to eq(scene::BACKUP_TEXT)
    end

    # @return [Array] the attempts table's header cells, and its rows split on spaces
    def attempts_table(out)
      lines = out.lines.map(&:chomp)
      header = lines.index { |l| l.start_with?("request_id") }
      expect(header).not_to be_nil
      [lines[header].split(/\s{2,}/), lines[(header + 1)..].take_while { |l| !l.empty? }.map(&:split)]
    end

    it "streams a partial answer, the reset, the backup's answer, then three attempts of one call" do
      out = demo
      expect(out).not_to include("\e[") # not a terminal: no colors
      expect_reset(out, LlmFailover::Demo)

      header, rows = attempts_table(out)
      expect(header).to eq(["request_id", "attempt", "provider", "model", "success", "error", "latency ms"])
      expect(rows.size).to eq(3)
      expect(rows.map(&:first).uniq.size).to eq(1)
      expect(rows.map { |r| r[1..4] }).to eq([%w[1 openai gpt-4o no], %w[2 openai gpt-4o no],
                                              %w[3 anthropic claude-sonnet-4-6 yes]])
      expect(rows[0]).to include("ServiceUnavailableError", "503")
      expect(rows[1]).to include("StreamInterruptedError")
      expect(rows.map(&:last)).to all(match(/\A\d+\z/))
      expect(out).to include("answered by anthropic/claude-sonnet-4-6 after 3 attempts, failover: yes")
    end

    it "--tools: the tool runs once, the primary dies on the next turn, the backup finishes the loop" do
      out = demo("--tools")
      expect(out).to include("#{LlmFailover::ToolsDemo::PRIMARY_TEXT}\n[running weather({\"city\":\"Lisbon\"})]\n" \
                             "[weather returned {\"city\":\"Lisbon\",\"temp_c\":17,\"wind\":\"strong\"}]\n")
      expect(out).to include("\n#{LlmFailover::ToolsDemo::BACKUP_TEXT}\n")
      expect(out).to include("answered by anthropic/claude-sonnet-4-6 after 6 attempts, failover: yes")
      expect(out).to include("tool calls: weather (asked by openai, succeeded); the weather tool ran 1 time(s)")
      # One request: its attempts numbered on across the turns, in the order they were made.
      _, rows = attempts_table(out)
      expect(rows.map(&:first).uniq.size).to eq(1)
      expect(rows.map { |r| r[1..2] + [r[4]] })
        .to eq([%w[1 openai yes]] + (2..5).map { |n| [n.to_s, "openai", "no"] } + [%w[6 anthropic yes]])
    end

    it "--hosts: a signed Bedrock stream cut mid-answer, reset, answered on the Responses API, both attempts priced" do
      out = demo("--hosts")
      expect_reset(out, LlmFailover::HostsDemo)

      header, rows = attempts_table(out)
      expect(header).to eq(["request_id", "attempt", "provider", "model", "protocol", "success", "error", "latency ms",
                            "cost"])
      expect(rows.map(&:first).uniq.size).to eq(1)
      expect(rows.map { |r| r[1..5] }).to eq([%w[1 bedrock claude-sonnet-4-5 bedrock no],
                                              %w[2 openai gpt-5 responses yes]])
      expect(rows[0][6]).to eq("StreamInterruptedError")
      expect(rows[0].last).to eq("$0.000000") # the cut stream reported no tokens

      # The backup's cost: its tokens at the default table's price for gpt-5 on OpenAI.
      input, output = out[/tokens: (\d+) in, (\d+) out/].scan(/\d+/).map(&:to_i)
      price = LlmFailover::Prices.default[:openai, "gpt-5"]
      expect(rows[1].last).to eq(format("$%.6f", (price.input * input + price.output * output) / 1_000_000))
      expect(out).to include("answered by openai/gpt-5 after 2 attempts, failover: yes")

      aws = LlmFailover::HostsDemo::AWS
      expect(out).not_to include(aws[:secret_access_key], aws[:access_key_id], "Signature=")
    end

    it "plays one scene at a time" do
      out, err, code = cli("demo", "--tools", "--hosts")
      expect([out, code]).to eq(["", 2])
      expect(err).to eq("llm_failover demo: demo plays one scene: --tools or --hosts (see `llm_failover help demo`)\n")
    end

    it "colors a terminal, and honours NO_COLOR" do
      colored, code = cli_on_tty("demo")
      expect(code).to eq(0)
      expect(colored).to include("\e[33m#{LlmFailover::CLI::RESET_MARKER}")

      plain, code = cli_on_tty("demo", env: { "NO_COLOR" => "1" })
      expect(code).to eq(0)
      expect(plain).to include(LlmFailover::CLI::RESET_MARKER)
      expect(plain).not_to include("\e[")
    end
  end

  describe "chat" do
    let(:primary) { start_fake_provider }
    let(:backup) { start_fake_provider }

    def openai_args(fp, *rest)
      ["chat", "--model", "m1", "--provider", "local", "--base-url", fp.base_url(:openai),
       "--api-key-env", "LF_CLI_KEY", *rest]
    end

    def backup_args(fp)
      ["--backup-model", "claude-b", "--backup-provider", "spare", "--backup-base-url", fp.base_url(:anthropic),
       "--backup-api", "anthropic", "--backup-api-key-env", "LF_CLI_KEY"]
    end

    it "streams the answer of an OpenAI-compatible server, with the key from --api-key-env" do
      primary.enqueue({ text: "Hello from the fake" })
      out, err, code = cli(*openai_args(primary, "--system", "Be brief", "Say", "hi"))
      expect([out, err, code]).to eq(["Hello from the fake\n", "", 0])

      request = primary.requests.last
      expect(request.path).to end_with("/v1/chat/completions")
      expect(request.stream).to be(true)
      expect(request.headers["authorization"]).to eq("Bearer #{key}")
      expect(request.json["model"]).to eq("m1")
      expect(request.json["messages"].map { |m| [m["role"], m["content"]] })
        .to eq([%w[system Be\ brief], %w[user Say\ hi]])
    end

    it "asks without streaming on --no-stream, reading the prompt from stdin" do
      primary.enqueue({ text: "Whole answer" })
      out, err, code = cli(*openai_args(primary, "--no-stream"), stdin_data: "piped question\n")
      expect([out, err, code]).to eq(["Whole answer\n", "", 0])
      expect(primary.requests.last.stream).to be(false)
      expect(primary.requests.last.json["messages"].last["content"]).to eq("piped question\n")
    end

    it "speaks the Anthropic protocol with --api anthropic" do
      primary.enqueue({ text: "Bonjour" })
      out, _, code = cli("chat", "--model", "claude-x", "--provider", "claude", "--api", "anthropic",
                         "--base-url", primary.base_url(:anthropic), "--api-key-env", "LF_CLI_KEY",
                         "--system", "Be brief", "Hi")
      expect([out, code]).to eq(["Bonjour\n", 0])
      request = primary.requests.last
      expect(request.api).to eq(:anthropic)
      expect(request.headers["x-api-key"]).to eq(key)
      expect(request.json["system"].to_s).to include("Be brief")
    end

    it "fails over to the backup, marks the reset in a pipe, and reports the attempts on --verbose" do
      primary.enqueue({ text: "one two three four five six", cut_after: 3 })
      backup.enqueue({ text: "The backup answer" })
      out, err, code = cli(*openai_args(primary, *backup_args(backup), "--verbose", "Hi"))
      expect(code).to eq(0), err
      expect(out).to eq("one two three \n#{LlmFailover::CLI::RESET_MARKER}\nThe backup answer\n")
      expect(err).to include("key from $LF_CLI_KEY")
      expect(err).to include("answered by spare/claude-b after 2 attempts, failover: yes")
      rows = err.lines.drop_while { |l| !l.start_with?("request_id") }.drop(1).take(2).map(&:split)
      expect(rows.map { |r| r[1..4] }).to eq([%w[1 local m1 no], %w[2 spare claude-b yes]])
      expect(out + err).not_to include(key)
    end

    it "erases the partial answer on a terminal" do
      primary.enqueue({ text: "one two three four five six", cut_after: 3 })
      backup.enqueue({ text: "The backup answer" })
      output, code = cli_on_tty(*openai_args(primary, *backup_args(backup), "Hi"))
      expect(code).to eq(0)
      expect(output).to match(/one two three \r(\e\[\d+A)?\e\[J/)
      expect(output.split("\e[J", 2).last).to include("The backup answer")
    end

    it "exits 1 on a provider failure with the error and the attempts on stderr, and never shows the key" do
      primary.enqueue({ status: 401, headers: { "content-type" => "application/json" },
                        body: { error: { message: "Incorrect API key provided: #{key}.",
                                         type: "invalid_request_error", code: "invalid_api_key" } } })
      out, err, code = cli(*openai_args(primary, *backup_args(backup), "--verbose", "Hi"))
      expect([out, code]).to eq(["", 1])
      expect(err).to include("llm_failover chat: LlmFailover::UnauthorizedError: ")
      expect(err).to match(/^\h{8}\s+1\s+local\s+m1\s+no\s+UnauthorizedError 401/)
      expect(err).not_to include(key)
      expect(backup.request_count).to eq(0) # a wrong key is never hidden by the backup
      no_backtrace(err)
    end

    it "exits 1 after the retries of a provider that stays down" do
      primary.default = { error: :unavailable }
      out, err, code = cli(*openai_args(primary, "--max-retries", "1", "Hi"))
      expect([out, code]).to eq(["", 1])
      expect(err.lines.first).to start_with("llm_failover chat: LlmFailover::ServiceUnavailableError")
      expect(err.scan("ServiceUnavailableError 503").size).to eq(2)
      expect(primary.request_count).to eq(2)
    end

    it "exits 2 naming the variable when a key is missing, before any request" do
      out, err, code = cli("chat", "--model", "gpt-4o", "--provider", "openai", "Hi")
      expect([out, err, code]).to eq(["", "llm_failover chat: set OPENAI_API_KEY to the API key for provider openai\n", 2])

      _, err, code = cli(*openai_args(primary, "Hi"), env: { "LF_CLI_KEY" => nil })
      expect([err, code]).to eq(["llm_failover chat: set LF_CLI_KEY to the API key for provider local\n", 2])
      expect(primary.request_count).to eq(0)
    end

    {
      "no --model" => [%w[chat --provider openai Hi], "missing --model"],
      "an unknown provider without --base-url" => [%w[chat --model m --provider groq Hi], 'unknown provider "groq"'],
      "half a backup" => [%w[chat --model m --provider openai --backup-model b Hi], "--backup-provider is missing"],
      "an unknown option" => [%w[chat --model m --provider openai --bogus Hi], "invalid option: --bogus"],
      "an unknown --api" => [%w[chat --model m --provider x --base-url http://127.0.0.1:1 --api grpc Hi], "--api"],
      "a non-numeric --max-retries" => [%w[chat --model m --provider openai --max-retries many Hi], "--max-retries"],
      "a bad --base-url" => [%w[chat --model m --provider x --api-key-env LF_CLI_KEY --base-url ftp://h Hi],
                             "base_url must be an http"],
      "no prompt" => [%w[chat --model m --provider x --api-key-env LF_CLI_KEY --base-url http://127.0.0.1:1],
                      "the prompt is empty"]
    }.each do |what, (args, message)|
      it "exits 2 in one line on #{what}" do
        out, err, code = cli(*args)
        expect([out, code]).to eq(["", 2])
        expect(err.lines.size).to eq(1)
        expect(err).to start_with("llm_failover chat: ")
        expect(err).to include(message)
        no_backtrace(err)
      end
    end
  end

  describe "report" do
    it "runs the ActiveRecord report, or says that it needs the integration" do
      out, err, code = cli("report", "--help")
      if File.exist?(File.join(root, "lib/llm_failover/report/cli.rb"))
        expect(err).not_to include("needs the ActiveRecord integration")
        expect(code).to eq(0), err
        expect(out).to include("--since DURATION", "--html PATH")
      else
        expect([out, code]).to eq(["", 2])
        expect(err).to start_with("llm_failover report: report needs the ActiveRecord integration")
      end
      no_backtrace(err)
    end
  end
end
