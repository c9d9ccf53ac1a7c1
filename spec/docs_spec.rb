# frozen_string_literal: true

require "spec_helper"
require "json"
require "open3"
require "tmpdir"
require_relative "support/doc_blocks"
require_relative "support/redis_server"

# Every ```ruby block of README.md and doc/**/*.md (guides added later included) is run,
# or is a verbatim part of a file a spec runs, or says in its first line why it is not
# run (spec/support/doc_blocks.rb has the three forms). An example that stops working
# fails here.
RSpec.describe "the documentation's Ruby examples", :ruby_only do
  root = File.expand_path("..", __dir__)
  runner = File.join(root, "spec/support/docs_runner.rb")
  # Fake keys: a developer's real ones must never turn a page into a live call.
  # REDIS_URL: a redis-server of the spec's own, for the pages' RedisStateStore.
  env = { "OPENAI_API_KEY" => "sk-docs-fake-openai", "ANTHROPIC_API_KEY" => "sk-ant-docs-fake",
          "GROQ_API_KEY" => "gsk_docs_fake", "OPENAI_API_KEY_B" => "sk-docs-fake-openai-b",
          "OPENAI_API_KEY_EU" => "sk-docs-fake-openai-eu", "GEMINI_API_KEY" => "AIza-docs-fake",
          "AZURE_OPENAI_API_KEY" => "az-docs-fake", "VERTEX_ACCESS_TOKEN" => "ya29.docs-fake",
          "AWS_ACCESS_KEY_ID" => "AKIDDOCSFAKE", "AWS_SECRET_ACCESS_KEY" => "docs-fake-secret",
          "AWS_SESSION_TOKEN" => nil,
          "LLM_FAILOVER_LIVE" => nil, "REDIS_URL" => nil }
  redis = nil

  before(:all) do
    if RedisServer.available?
      redis = RedisServer.new.start
      env["REDIS_URL"] = redis.url
    end
  end

  after(:all) { redis&.stop }
  # A file a spec runs as a whole, without naming it: the fixture app is copied whole
  # (spec/rails_app_spec.rb) and the generators' templates are what the generator specs
  # generate and run.
  run_whole = %w[spec/fixtures/rails_app/ spec/fixtures/rails8_app/ lib/generators/]
  specs = Dir.glob(File.join(root, "spec/**/*_spec.rb")).reject { |f| f.end_with?("/docs_spec.rb") }
  spec_text = specs.map { |f| File.read(f) }.join("\n")

  # Runs +blocks+ of one page in one process.
  # @return [Array(Hash{Integer => Hash}, String)] results by line, and the page's output
  define_singleton_method(:run_page) do |blocks|
    Dir.mktmpdir("docs_spec") do |dir|
      input = File.join(dir, "blocks.json")
      results = File.join(dir, "results.jsonl")
      File.write(input, JSON.generate(blocks.map { |b| b.to_h.slice(:path, :line, :code, :before) }))
      output, = Open3.capture2e(env, RbConfig.ruby, runner, input, results, chdir: root)
      by_line = File.exist?(results) ? File.readlines(results).map { |l| JSON.parse(l) }.to_h { |r| [r["line"], r] } : {}
      [by_line, output]
    end
  end

  pages = ["README.md", *Dir.glob("doc/**/*.md", base: root).sort]
  pages.each do |page|
    blocks = DocBlocks.parse(page, File.read(File.join(root, page)))

    describe page do
      runnable = blocks.select { |b| b.kind == :run }
      before(:all) { @results, @output = self.class.run_page(runnable) if runnable.any? } # rubocop:disable RSpec/InstanceVariable

      blocks.each do |block|
        case block.kind
        when :run
          it "runs the block at line #{block.line}" do
            result = @results[block.line]
            expect(result).not_to be_nil, "#{block.where} never ran; the page's output:\n#{@output}"
            expect(result["ok"]).to be(true), "#{block.where} failed:\n#{result['error']}\noutput:\n#{@output}"
          end
        when :included
          it "finds the block at line #{block.line} in #{block.include_path}, which a spec runs" do
            file = File.join(root, block.include_path)
            expect(File).to exist(file)
            expect(File.read(file)).to include(block.code)
            run = run_whole.any? { |dir| block.include_path.start_with?(dir) } ||
                  spec_text.include?(block.include_path)
            expect(run).to be(true), "no spec runs #{block.include_path}"
          end
        when :skip
          it "does not run the block at line #{block.line} (#{block.skip_reason})" do
            skip "not run: #{block.skip_reason}"
          end
        end
      end
    end
  end

  describe "the runner" do
    def page_results(markdown)
      Dir.mktmpdir do |dir|
        path = File.join(dir, "page.md")
        File.write(path, markdown)
        results, output = self.class.run_page(DocBlocks.parse(path))
        results.values.map { |r| [r["ok"], r["error"].to_s[/\A\w+(::\w+)*/]] }.then { |r| [r, output] }
      end
    end

    it "fails a block that does not work, and runs the next one in the same session" do
      results, output = page_results(<<~MD)
        ```ruby
        chat = LlmFailover.chat(model: "gpt-4o", provider: :openai)
        puts chat.ask("Hi").content
        ```

        ```ruby
        chat.ask("Hi") { |chunk| screen.print(chunk.content) }
        ```

        <!-- docs_spec: before fake(:openai).enqueue({ error: :unauthorized }) -->
        ```ruby
        chat.ask("Hi")
        ```

        ```ruby
        [1 + 1, 2].max   # => 2: prose after the value
        chat.ask("Hi").content.size   # => 3 (it is 23)
        ```
      MD
      expect(results).to eq([[true, nil], [false, "NameError"], [false, "LlmFailover::UnauthorizedError"],
                             [false, "DocsRunner::Mismatch"]])
      expect(output).to include("Hello from FakeProvider")
    end

    it "sends nothing to a public host: the page's providers answer from loopback" do
      results, = page_results(<<~MD)
        ```ruby
        LlmFailover.configure do |c|
          c.provider :openai, api: :openai, api_key: ENV.fetch("OPENAI_API_KEY"), base_url: "https://api.openai.com/v1"
        end
        reply = LlmFailover.chat(model: "gpt-4o", provider: :openai).ask("Hi")
        raise "not the fake: \#{reply.content}" unless reply.content == "Hello from FakeProvider"
        ```
      MD
      expect(results).to eq([[true, nil]])
    end
  end

  it "lists every default of LlmFailover::Configuration in the README's defaults line, with its value" do
    require "llm_failover"
    line = File.read(File.join(root, "README.md"))[/^\*\*Defaults\*\*.*?(?=\n\n)/m].tr("\n", " ")
    expect(line).not_to be_nil
    LlmFailover::Configuration::DEFAULTS.each do |name, value|
      said = line[/`#{name}\b`?([^,`(]*)/, 1]&.strip
      expect(said).not_to be_nil, "the defaults line leaves out #{name}"
      next unless value.is_a?(Numeric) || value == false

      shown = [value.to_s, value.to_s.reverse.scan(/\d{1,3}/).join("_").reverse,
               ("#{value / (1024 * 1024)} MiB" if value.is_a?(Integer) && (value % (1024 * 1024)).zero? && value.positive?)]
      expect(shown.compact.any? { |v| said.start_with?(v) }).to be(true),
                                                             "the defaults line says #{name} #{said}, the code #{value}"
    end
  end

  it "parses the three forms" do
    blocks = DocBlocks.parse("x.md", <<~MD)
      <!-- docs_spec: file examples/script.rb -->
      ```ruby
      a = 1
      ```

      ```ruby
      # not run: a Gemfile line
      gem "llm_failover"
      ```

        ```ruby
        b = 2
        ```
    MD
    expect(blocks.map(&:kind)).to eq(%i[included skip run])
    expect(blocks.map(&:line)).to eq([3, 7, 12])
    expect(blocks.last.code).to eq("b = 2\n")
  end
end
