# frozen_string_literal: true

require "spec_helper"
require "opentelemetry/sdk"

# Issue 27: with opentelemetry-api loaded, a span per call and one per attempt (GenAI
# semantic conventions), the failover and circuit decisions as events, and no prompt
# or answer text unless the app asks for it. The SDK's in-memory exporter reads the
# spans back; the providers are FakeProviders.
RSpec.describe "OpenTelemetry spans", :ruby_only do
  include_context "with fake providers"

  PROMPT = "Where is my parcel 7 for Ada Lovelace?"
  ANSWER = "It left the depot this morning"

  before(:context) do
    @exporter = OpenTelemetry::SDK::Trace::Export::InMemorySpanExporter.new
    OpenTelemetry::SDK.configure do |c|
      c.logger = Logger.new(File::NULL)
      c.add_span_processor(OpenTelemetry::SDK::Trace::Export::SimpleSpanProcessor.new(@exporter))
    end
  end

  # The rest of the suite runs with the API's own no-op provider again: no recording.
  after(:context) { OpenTelemetry.tracer_provider = OpenTelemetry::Internal::ProxyTracerProvider.new }

  before { @exporter.reset }

  def spans
    @exporter.finished_spans
  end

  def call_spans
    spans.select { |s| s.kind == :internal }
  end

  def attempt_spans
    spans.select { |s| s.kind == :client }.sort_by(&:start_timestamp)
  end

  def the_call_span
    expect(call_spans.size).to eq(1)
    call_spans.first
  end

  # Every attribute value of every span and event, as text.
  def every_value
    spans.flat_map do |s|
      s.attributes.values + Array(s.events).flat_map { |e| e.attributes.values }
    end.map(&:to_s)
  end

  # The model the provider said answered (Reply#response_model once Reply has it).
  def answered_by(reply)
    reply.respond_to?(:response_model) ? reply.response_model : reply.model
  end

  it "makes one call span and a span per attempt of a failover, the failover as an event" do
    LlmFailover.configuration.max_retries = 0
    primary.enqueue({ error: :server })
    backup.enqueue({ text: ANSWER, usage: { input: 11, output: 4 } })
    reply = failover_chat.ask(PROMPT)

    expect(call_spans.size).to eq(1)
    call = call_spans.first
    expect(call.name).to eq("chat gpt-4o")
    expect(call.attributes).to include("gen_ai.operation.name" => "chat", "gen_ai.system" => "openai",
                                       "gen_ai.request.model" => "gpt-4o",
                                       "gen_ai.response.model" => answered_by(reply),
                                       "gen_ai.usage.input_tokens" => 11, "gen_ai.usage.output_tokens" => 4,
                                       "llm_failover.request_id" => reply.request_id,
                                       "llm_failover.failover" => true, "llm_failover.attempts" => 2)

    expect(attempt_spans.size).to eq(2)
    expect(attempt_spans.map(&:parent_span_id).uniq).to eq([call.span_id])
    expect(attempt_spans.map(&:trace_id).uniq).to eq([call.trace_id])
    first, second = attempt_spans
    expect(first.attributes).to include("gen_ai.system" => "openai", "gen_ai.request.model" => "gpt-4o",
                                        "error.type" => "LlmFailover::ServerError",
                                        "http.response.status_code" => 500, "llm_failover.attempt" => 1)
    expect(first.status.code).to eq(OpenTelemetry::Trace::Status::ERROR)
    expect(second.attributes).to include("gen_ai.system" => "anthropic", "gen_ai.request.model" => "claude-sonnet-4-6",
                                         "gen_ai.usage.input_tokens" => 11, "gen_ai.usage.output_tokens" => 4,
                                         "llm_failover.attempt" => 2)
    expect(second.attributes).not_to include("error.type")
    reply.attempts.zip(attempt_spans).each do |record, span|
      expect(span.attributes["llm_failover.provider_request_id"]).to eq(record.provider_request_id)
    end
    expect(reply.attempts.map(&:provider_request_id).compact).not_to be_empty
    # The attempts' own times: the first ends before the second starts, both within the call.
    expect(first.end_timestamp).to be <= second.start_timestamp
    expect(first.start_timestamp).to be >= call.start_timestamp
    expect(second.end_timestamp).to be <= call.end_timestamp

    failover = call.events.select { |e| e.name == "llm_failover.failover" }
    expect(failover.map(&:attributes))
      .to eq([{ "llm_failover.from" => "openai/gpt-4o", "llm_failover.to" => "anthropic/claude-sonnet-4-6",
                "error.type" => "LlmFailover::ServerError" }])
  end

  it "puts no prompt or answer text on any span by default, and both when trace_content is on" do
    primary.enqueue({ text: ANSWER }, { text: ANSWER })
    failover_chat.ask(PROMPT)
    expect(spans.size).to eq(2)
    expect(every_value.grep(/parcel|depot/)).to eq([])

    @exporter.reset
    failover_chat(trace_content: true).ask(PROMPT)
    call = the_call_span
    expect(JSON.parse(call.attributes["gen_ai.input.messages"]))
      .to eq([{ "role" => "user", "content" => PROMPT }])
    expect(JSON.parse(call.attributes["gen_ai.output.messages"]))
      .to eq([{ "role" => "assistant", "content" => ANSWER }])
  end

  it "marks a call every target refused with its error, and the circuit decisions as events" do
    LlmFailover.configure do |c|
      c.max_retries = 0
      c.circuit_threshold = 1
    end
    primary.enqueue({ error: :unauthorized }) # the app's key: no backup could fix it
    expect { failover_chat.ask(PROMPT) }.to raise_error(LlmFailover::UnauthorizedError)
    call = the_call_span
    expect(call.attributes).to include("error.type" => "LlmFailover::UnauthorizedError", "llm_failover.attempts" => 1)
    expect(call.status.code).to eq(OpenTelemetry::Trace::Status::ERROR)
    expect(attempt_spans.map { |s| s.attributes["http.response.status_code"] }).to eq([401])

    # A 5xx opens the primary's circuit (threshold 1); the next call skips it.
    @exporter.reset
    primary.enqueue({ error: :server })
    backup.enqueue({ text: ANSWER }, { text: ANSWER })
    failover_chat.ask(PROMPT)
    opened = the_call_span.events.select { |e| e.name == "llm_failover.circuit_change" }
    expect(opened.map { |e| e.attributes.values_at("gen_ai.system", "llm_failover.circuit.to") })
      .to eq([%w[openai open]])

    @exporter.reset
    failover_chat.ask(PROMPT)
    call = the_call_span
    expect(call.events.map(&:name)).to eq(%w[llm_failover.circuit_skip llm_failover.failover])
    expect(attempt_spans.map { |s| s.attributes["gen_ai.system"] }).to eq(["anthropic"]) # no request to the primary
  end

  it "shows a target left out for the attachments it cannot take as an attachment_skip event with the reason" do
    LlmFailover.configure do |c|
      c.provider :openai, api: :openai, api_key: FakeProviderHelpers::PRIMARY_KEY,
                          base_url: primary.base_url(:openai), documents: false
    end
    backup.enqueue({ text: ANSWER })
    failover_chat.ask(PROMPT, with: { data: "%PDF-1.4\n%%EOF\n".b, mime_type: "application/pdf", filename: "r.pdf" })

    skip = the_call_span.events.find { |e| e.name == "llm_failover.attachment_skip" }
    expect(skip.attributes).to include("gen_ai.system" => "openai",
                                       "llm_failover.reason" => 'attachment "r.pdf": the target takes no PDFs ' \
                                                                "(documents: false)")
    expect(the_call_span.events.map(&:name)).not_to include("llm_failover.circuit_skip")
    expect(attempt_spans.map { |s| s.attributes["gen_ai.system"] }).to eq(["anthropic"])
  end
end
