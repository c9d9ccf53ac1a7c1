# frozen_string_literal: true

require "spec_helper"
require "logger"
require "active_support"
require "active_support/notifications"

# Issue 24, observability: each tool run is a "tool.llm_failover" event and a usage-log
# line (tool name, duration, error class), arguments and results only under
# c.log_tool_content.
RSpec.describe "Tool runs, observed" do
  include_context "with fake providers"

  let(:lines) { StringIO.new }
  let(:attempts) { [] }
  let(:events) { [] }

  let(:lookup) do
    Class.new(LlmFailover::Tool) do
      tool_name "lookup"
      param :account, type: :string
      def execute(account:)
        raise KeyError, "no account #{account}" if account == "missing"

        { "balance" => 12, "account" => account }
      end
    end
  end

  before do
    LlmFailover.configure do |c|
      c.usage_log = [Logger.new(lines, formatter: ->(*, msg) { "#{msg}\n" }), ->(record) { attempts << record }]
    end
  end

  around do |example|
    subscriber = ActiveSupport::Notifications.subscribe("tool.llm_failover") { |*args| events << args.last }
    example.run
  ensure
    ActiveSupport::Notifications.unsubscribe(subscriber)
  end

  def ask_with_two_calls(**options)
    primary.enqueue({ tool_calls: [{ name: "lookup", arguments: { "account" => "A-1" }, id: "call_1" },
                                   { name: "lookup", arguments: { "account" => "missing" }, id: "call_2" }] },
                    { text: "A-1 has 12." })
    failover_chat(feature: "billing", **options).with_tool(lookup).ask("Balances?")
  end

  def tool_lines
    lines.string.lines.map { |l| JSON.parse(l) }.select { |h| h["event"] == "tool" }
  end

  it "is an event and a log line per run: name, duration, error class, and no arguments or results" do
    reply = ask_with_two_calls
    expect(events.map { |e| [e[:tool], e[:call_id], e[:status], e[:error_class]] })
      .to eq([["lookup", "call_1", "succeeded", nil], ["lookup", "call_2", "failed", "KeyError"]])
    expect(events.map { |e| e[:request_id] }.uniq).to eq([reply.request_id])
    expect(events.first[:duration_ms]).to be_a(Float).and(be >= 0)
    expect(events.first[:started_at]).to be_a(Time)
    expect(events.first[:feature]).to eq("billing")
    expect(events.map { |e| e.values_at(:arguments, :result, :error_message) }.flatten.compact).to eq([])

    logged = tool_lines
    expect(logged.map { |h| [h["tool"], h["status"], h["error_class"], h["provider"]] })
      .to eq([["lookup", "succeeded", nil, "openai"], ["lookup", "failed", "KeyError", "openai"]])
    expect(lines.string).not_to include("A-1", "no account")
    # An attempt sink takes attempts only.
    expect(attempts.map(&:class).uniq).to eq([LlmFailover::AttemptRecord])
  end

  it "carries the arguments and the result when the app opts in" do
    LlmFailover.configure { |c| c.log_tool_content = true }
    ask_with_two_calls
    expect(events.map { |e| e.values_at(:arguments, :result) })
      .to eq([['{"account":"A-1"}', '{"balance":12,"account":"A-1"}'], ['{"account":"missing"}', "KeyError: no account missing"]])
    expect(events.last[:error_message]).to eq("no account missing")
    expect(tool_lines.first["arguments"]).to eq('{"account":"A-1"}')
  end

  it "has none for a call that never ran (an unknown tool)" do
    primary.enqueue({ tool_calls: [{ name: "nope", arguments: {}, id: "call_x" }] }, { text: "Sorry." })
    failover_chat.with_tool(lookup).ask("Hm?")
    expect(events).to eq([])
    expect(tool_lines).to eq([])
  end

  it "refuses a log_tool_content that is not true or false" do
    expect { LlmFailover.configure { |c| c.log_tool_content = "yes" } }
      .to raise_error(LlmFailover::ConfigurationError, /log_tool_content must be true or false/)
  end
end
