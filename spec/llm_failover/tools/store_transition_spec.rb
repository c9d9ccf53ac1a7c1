# frozen_string_literal: true

require "spec_helper"

# Tools::StoreTransition: which stored status a tool call's new state may be written
# over, the one rule MemoryStore and the ActiveRecord store share.
RSpec.describe LlmFailover::Tools::StoreTransition do
  def call(status = :pending)
    LlmFailover::ToolCall.new(id: "call_1", name: "lookup", arguments: "{}", status: status)
  end

  describe ".prior" do
    it "lets a run start only from pending or approved, so one of two readers wins it" do
      expect(described_class.prior(call(:running), seen: "pending")).to eq(%w[pending approved])
    end

    it "lets a call the store read as running run again from running (an idempotent! rerun)" do
      expect(described_class.prior(call(:running), seen: "running")).to eq(%w[running])
    end

    it "never lets an approval follow a denial, nor a denial a run" do
      expect(described_class.prior(call(:approved), seen: nil)).not_to include("denied")
      expect(described_class.prior(call(:denied), seen: nil)).to eq(%w[pending])
    end

    it "takes a result over any state without one, and nothing over a result" do
      finals = %w[succeeded failed rejected denied]
      LlmFailover::ToolCall::STATUSES.each do |status|
        expect(described_class.prior(call(status), seen: nil) & finals).to be_empty
      end
      expect(described_class.prior(call(:succeeded), seen: nil)).to include("running")
    end
  end

  describe ".check_not_final!" do
    it "refuses a call that has its result" do
      done = call.start!.succeed!("ok")
      expect { described_class.check_not_final!(done) }.to raise_error(ArgumentError, /final \(succeeded\)/)
      expect(described_class.check_not_final!(call)).to be_nil
    end
  end

  describe ".refuse!" do
    it "names a call that is not stored" do
      expect { described_class.refuse!(call, nil, %w[pending]) }.to raise_error(ArgumentError, /not stored/)
    end

    it "names the stored status and the ones it needed" do
      expect { described_class.refuse!(call(:running), "succeeded", %w[pending approved]) }
        .to raise_error(ArgumentError, /is succeeded in the store, not pending or approved: it cannot become running/)
    end
  end

  # The rule as a store applies it: a stale copy of a call never runs it again.
  it "refuses, in a MemoryStore, to start a stale copy of a call whose result is stored" do
    store = LlmFailover::MemoryStore.new
    message = store.start_assistant(model: "gpt-4o", provider: "openai")
    store.finish_assistant(message, content: "", model: "gpt-4o", provider: "openai", input_tokens: 1,
                                    output_tokens: 1, tool_calls: [call])
    first = store.tool_call("call_1")
    stale = store.tool_call("call_1")

    store.save_tool_call(first.start!)
    store.add_tool_result(first.succeed!("ok"))
    expect { store.save_tool_call(stale.start!) }.to raise_error(ArgumentError, /another process moved it first/)
    expect(store.tool_call("call_1").status).to eq(:succeeded)
  end
end
