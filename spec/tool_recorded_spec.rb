# frozen_string_literal: true

require "spec_helper"
require "support/engine_helpers"
require "support/tool_wire"

# Every recorded function_calling answer (real traffic of both protocols from several
# providers), served byte for byte by a FakeProvider, through the whole C path: the
# tool calls the engine hands Ruby are the ones ToolWire reads from the recording in
# plain Ruby.
RSpec.describe "Recorded tool calls through the engine" do
  let(:engine) { LlmFailover::Engine.new }
  let(:fp) { start_fake_provider }

  # JSON text compared as what it means ("" is how a call without arguments streams).
  def meaning(text)
    text.to_s.strip.empty? ? {} : JSON.parse(text)
  end

  recordings = Dir[File.join(ToolWire::FIXTURES, "chat_function_calling_*.json")].sort
  it "has recordings of both protocols" do
    apis = recordings.flat_map { |f| JSON.parse(File.read(f))["interactions"].map { |i| i["request"]["api"] } }
    expect(apis.uniq.sort).to eq(%w[anthropic openai])
    expect(recordings.size).to be >= 100
  end

  recordings.each do |file|
    JSON.parse(File.read(file))["interactions"].each_with_index do |interaction, index|
      api = interaction["request"]["api"]
      response = interaction["response"]
      streamed = JSON.parse(interaction["request"]["body"])["stream"] == true

      it "#{File.basename(file, '.json')} ##{index} (#{api}#{', streamed' if streamed})" do
        fp.enqueue({ fixture: file, interaction: index })
        listener = EngineHelpers::RecordingListener.new
        result = engine.run(engine_request(engine_target(fp, api: api.to_sym), stream: streamed), listener)
        unless (200..299).cover?(response["status"])
          expect(result.status).to eq(:failed)
          next
        end

        expected = ToolWire.read_answer(api, response["body"], streamed)
        expect(result.status).to eq(:ok)
        calls = result[:tool_calls] || []
        expect(calls.map { |_id, name, _args| name }).to eq(expected["calls"].map { |c| c["name"] })
        expect(calls.map { |_id, _name, args| meaning(args) }).to eq(expected["calls"].map { |c| meaning(c["arguments"]) })
        expect(calls.map(&:first)).to eq(expected["calls"].map { |c| c["id"].to_s })
        expect(result[:content]).to eq(expected["text"])
        expect(listener.chunks.join).to eq(expected["text"]) if streamed
        expect(result[:finish_reason]).to eq("tool_calls") unless calls.empty?
      end
    end
  end
end
