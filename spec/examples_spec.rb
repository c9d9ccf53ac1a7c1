# frozen_string_literal: true

require "spec_helper"
require "open3"
require "pty"
require "tmpdir"

# Every example runs as its users would run it: `bundle exec ruby examples/...`, as a
# subprocess, against the FakeProviders it starts itself.
RSpec.describe "examples/", :ruby_only do
  root = File.expand_path("..", __dir__)
  # A developer's real keys must not turn an example into a live call.
  clean_env = { "OPENAI_API_KEY" => nil, "ANTHROPIC_API_KEY" => nil, "LLM_FAILOVER_LIVE" => nil }

  define_method(:run_example) do |name|
    out, err, status = Open3.capture3(clean_env, "bundle", "exec", "ruby", "examples/#{name}", chdir: root)
    expect(status.exitstatus).to eq(0), "#{name} failed:\n#{err}"
    expect(err).to eq("")
    out
  end

  it "finds the examples the README points to" do
    expect(Dir.children(File.join(root, "examples")))
      .to include("background_job.rb", "script.rb", "streaming_consumer.rb")
  end

  it "script.rb: answers, fails over on an empty account, and lets a 401 through" do
    out = run_example("script.rb")
    expect(out).to include("A: Paris.\n   answered by openai/gpt-4o after 1 attempt(s), failover: no")
    expect(out).to include("[attempt 1] openai/gpt-4o: LlmFailover::ProviderQuotaError 429")
    expect(out).to include("A: Rome.\n   answered by anthropic/claude-sonnet-4-6 after 2 attempt(s), failover: yes")
    expect(out).to include("error: LlmFailover::UnauthorizedError (not retryable) from openai/gpt-4o after 1 attempt(s)")
    expect(out).to include('assistant "Rome." (anthropic/claude-sonnet-4-6, complete)')
    expect(out).to include("openai saw 3 requests, anthropic 1")
  end

  it "background_job.rb: fails over, moves to the backup past the quota, and decides what to retry" do
    lines = run_example("background_job.rb").lines.map(&:chomp)
    expect(lines.size).to eq(6)
    expect(lines[0]).to match(%r{\Aticket 1 \(0/150 tokens used\): ".+" by openai/gpt-4o-mini, 1 attempt\(s\)\z})
    expect(lines[1]).to match(%r{\Aticket 2 .* by anthropic/claude-haiku-4-5, 4 attempt\(s\), failover\z})
    # Past the quota the backup is asked first and alone: one attempt, no failover.
    expect(lines[2]).to match(%r{\Aticket 3 \(160/150 tokens used\): ".+" by anthropic/claude-haiku-4-5, 1 attempt\(s\)\z})
    expect(lines[3]).to eq("ticket 4 (240/150 tokens used): job raised LlmFailover::OverloadedError; " \
                           "the job system retries it later")
    expect(lines[4]).to start_with("ticket 5 (240/150 tokens used): not retried: LlmFailover::BadRequestError")
    expect(lines[5]).to eq("openai saw 4 requests, anthropic 6")
  end

  it "tools.rb: runs the tool once, fails over between two turns, and the backup finishes the loop" do
    out = run_example("tools.rb")
    expect(out).to include("Let me check.\n[calling weather {\"city\":\"Paris\"}]\n")
    expect(out).to include("[weather returned {\"city\":\"Paris\",\"temp\":21,\"unit\":\"c\"}]\nIt is 21 °C in Paris.")
    expect(out).to include("answered by anthropic/claude-sonnet-4-6, failover: yes")
    expect(out).to include("tool call weather {\"city\":\"Paris\"} asked by openai: succeeded")
    expect(out).to include("the tool ran 1 time(s); 3 attempts under request")
    expect(out).to include("stored: user, assistant, tool, assistant")
    expect(out).to include("openai saw 2 requests, anthropic 1")
  end

  it "streaming_consumer.rb: marks the reset in a pipe and ends with the backup's answer alone" do
    out = run_example("streaming_consumer.rb")
    partial, rest = out.split("\n[reset: the answer above is void; the backup answers below]\n", 2)
    expect(partial).to eq("Streaming lets the reader start early, but ")
    expect(rest).to start_with("Streaming shows words as they come.")
    expect(out).to include("answered by anthropic/claude-sonnet-4-6, failover: yes")
    expect(out).to include("terminal shows exactly the reply: true", "browser shows exactly the reply: true")
    expect(out).to include("1 reset")
    expect(out).to include("stored answer: the backup's alone")
  end

  it "async.rb: twenty calls on one thread under Async, one stopped mid-stream, one at with_timeout" do
    lines = run_example("async.rb").lines.map(&:chomp)
    expect(lines[0]).to eq('20 answers on one thread: ["One answer per fiber."]')
    expect(lines[1]).to match(/\Ain \d+\.\d\d s \(one alone: \d+\.\d\d s\); the ticker ticked \d+ times meanwhile\z/)
    expect(lines[2..]).to eq(['stopped after "One "', "stored: user (complete), assistant (failed)",
                              "with_timeout ended the silent call; stored: assistant (failed)"])
  end

  it "testing/summaries_spec.rb: an app's specs against the FakeProvider pass in any order (doc/testing.md)" do
    out, err, status = Open3.capture3(clean_env, "bundle", "exec", "rspec", "examples/testing/summaries_spec.rb",
                                      "--order", "defined", chdir: root)
    expect(status.exitstatus).to eq(0), "examples/testing/summaries_spec.rb failed:\n#{out}#{err}"
    expect(out).to include("8 examples, 0 failures")
  end

  it "doc/report_example.rb: writes the report page of its made-up day (doc/cli.md)" do
    Dir.mktmpdir("report_example") do |dir|
      page = File.join(dir, "report.html")
      _, err, status = Open3.capture3(clean_env, "bundle", "exec", "ruby", "-e",
                                      'require "./doc/report_example"; ReportExample.write(ARGV[0])', page, chdir: root)
      expect(status.exitstatus).to eq(0), err
      html = File.read(page)
      expect(html).to include("<svg", "Circuit of openai/gpt-4o open", "UnauthorizedError", "OverloadedError")
      expect(html).not_to include("<script")
      # The page doc/cli.md links is this one (its seeded day), but for when it was made.
      made = %r{<p>Generated [^<]*</p>}
      stale = html.sub(made, "") != File.read(File.join(root, "doc/report_example.html")).sub(made, "")
      expect(stale).to be(false), "doc/report_example.html is stale: bundle exec ruby doc/report_example.rb"
    end
  end

  it "streaming_consumer.rb: erases the partial answer on a terminal" do
    output = +""
    code = nil
    PTY.spawn(clean_env, "bundle", "exec", "ruby", "examples/streaming_consumer.rb", chdir: root) do |r, _w, pid|
      begin
        loop { output << r.readpartial(4096) }
      rescue EOFError, Errno::EIO
        nil
      end
      code = Process.wait2(pid)[1].exitstatus
    end
    expect(code).to eq(0)
    expect(output).to match(/\AStreaming lets the reader start early, but \r(\e\[\d+A)?\e\[JStreaming shows words/)
    expect(output).not_to include("[reset:")
  end
end
