# frozen_string_literal: true

# Runs the Ruby blocks of one documentation page, in order, the way a reader pastes them
# into one session: `ruby spec/support/docs_runner.rb BLOCKS.json RESULTS.jsonl`
# (spec/docs_spec.rb writes BLOCKS.json). Each block is evaluated in one binding shared by
# the page, under its own file name and line, so a backtrace points into the Markdown.
# One JSON line per block goes to RESULTS.jsonl: its line, whether it ran, its error.
#
# A line `EXPRESSION # => VALUE` is checked: when VALUE (the comment up to a ": ", " (" or
# "; " that starts the prose) is a Ruby value, EXPRESSION must equal it.
#
# Nothing leaves the machine: every provider the page declares is answered by a
# FakeProvider of its own on loopback (the page's base_url, when it names a public host,
# is replaced by the FakeProvider's: the gem's own code runs unchanged from there on), and
# the keys are fake ones from the environment the spec sets. Before the first block the
# providers of the README's first chat (:openai, :anthropic, :groq) are configured, as the
# guides say they assume.
$LOAD_PATH.unshift(File.expand_path("../../lib", __dir__))
require "json"
require "logger"
require "ripper"
require "timeout"
require "llm_failover"
require "llm_failover/testing"

module DocsRunner
  FAKES = {}
  LOOPBACK = %r{\Ahttps?://(127\.0\.0\.1|localhost|\[::1\])[:/]}

  # @return [LlmFailover::Testing::FakeProvider] the one that answers provider +name+
  def self.fake(name)
    FAKES[name.to_sym] ||= LlmFailover::Testing::FakeProvider.start
  end

  # Points every provider a page declares at its FakeProvider, at the path its host
  # takes (LlmFailover::Testing.fake_api): declared as the page says first, so that the
  # page's own mistakes still raise.
  module Redirect
    def provider(name, base_url: nil, **options)
      declared = super
      return declared if base_url&.match?(LOOPBACK)

      super(name, **options, base_url: DocsRunner.fake(name).base_url(LlmFailover::Testing.fake_api(declared)))
    end
  end

  # The methods a `<!-- docs_spec: before ... -->` line may call, and the check of a
  # `# =>` comment.
  module Helpers
    def fake(name)
      DocsRunner.fake(name)
    end

    def __docs_says(line, actual, expected_source)
      expected = eval(expected_source, TOPLEVEL_BINDING) # rubocop:disable Security/Eval -- checked by DocsRunner.value
      return actual if actual == expected

      raise DocsRunner::Mismatch, "line #{line}: #{actual.inspect}, where the page says # => #{expected_source}"
    end
  end

  class Mismatch < StandardError; end

  COMMENT = /\A(?<code>.*\S)\s+# => (?<says>.+)\z/

  # The block with each checkable `EXPRESSION # => VALUE` line wrapped in a check, on the
  # same line so that line numbers stay.
  def self.checked(code, first_line)
    code.lines.each_with_index.map do |text, i|
      m = COMMENT.match(text.chomp)
      source = m && Ripper.sexp(m[:code]) && value(m[:says])
      source ? "__docs_says(#{first_line + i}, (#{m[:code]}), #{source.inspect})\n" : text
    end.join
  end

  # The leading Ruby value of a `# =>` comment's text, or nil when it is prose.
  def self.value(says)
    cuts = [says.size, *[": ", " (", "; "].map { |sep| says.index(sep) }.compact].uniq.sort.reverse
    cuts.each do |cut|
      candidate = says[0, cut].strip
      next unless Ripper.sexp(candidate)

      begin
        eval(candidate, TOPLEVEL_BINDING) # rubocop:disable Security/Eval -- a literal from the page
        return candidate
      rescue StandardError, ScriptError
        next
      end
    end
    nil
  end
end

LlmFailover::Configuration.prepend(DocsRunner::Redirect)
LlmFailover.configure do |c|
  c.provider :openai, api: :openai, api_key: ENV.fetch("OPENAI_API_KEY")
  c.provider :anthropic, api: :anthropic, api_key: ENV.fetch("ANTHROPIC_API_KEY")
  c.provider :groq, api: :openai, api_key: ENV.fetch("GROQ_API_KEY")
  c.retry_interval = 0.01 # the pages' calls wait as little as a test's
end

blocks = JSON.parse(File.read(ARGV.fetch(0)))
results = File.open(ARGV.fetch(1), "w")
results.sync = true
page = Object.new.extend(DocsRunner::Helpers).instance_eval { binding }

blocks.each do |block|
  error = nil
  begin
    Timeout.timeout(60) do
      block["before"].each { |code| page.eval(code, "#{block['path']} (docs_spec before)", block["line"]) }
      page.eval(DocsRunner.checked(block["code"], block["line"]), block["path"], block["line"])
    end
  rescue Exception => e # rubocop:disable Lint/RescueException -- a page's exit or interrupt is its failure too
    error = "#{e.class}: #{e.message}\n#{e.backtrace&.first(8)&.join("\n")}"
  end
  $stdout.flush
  results.puts(JSON.generate(line: block["line"], ok: error.nil?, error: error))
end
results.close
DocsRunner::FAKES.each_value(&:stop)
