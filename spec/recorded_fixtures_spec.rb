# frozen_string_literal: true

require "spec_helper"
require "support/engine_helpers"

# Every recorded provider answer, served byte for byte by a FakeProvider, goes through
# the whole C path (libcurl, SSE parser, wire parser, classifier). The expectations are
# computed here in plain Ruby from the recording, independently of the C parsers.
RSpec.describe "Recorded provider traffic" do
  FIXTURE_DIR = File.expand_path("fixtures/recorded", __dir__)

  def self.sse_events(body)
    body.split(/\r?\n\r?\n/).filter_map do |frame|
      data = frame.lines.select { |l| l.start_with?("data:") }.map { |l| l.sub(/\Adata: ?/, "").chomp }.join("\n")
      data.empty? ? nil : data
    end
  end

  # What the recording says the answer is: [text, model, input_tokens, output_tokens].
  def self.expected_answer(api, body, streamed)
    if streamed
      text = +""
      model = nil
      input = output = nil
      sse_events(body).each do |data|
        next if data == "[DONE]"

        j = JSON.parse(data)
        if api == "anthropic"
          case j["type"]
          when "message_start"
            model = j.dig("message", "model")
            input = j.dig("message", "usage", "input_tokens")
          when "content_block_delta"
            text << j.dig("delta", "text").to_s if j.dig("delta", "type") == "text_delta"
          when "message_delta"
            output = j.dig("usage", "output_tokens")
            input = j.dig("usage", "input_tokens") || input
          end
        else
          model ||= j["model"]
          text << j.dig("choices", 0, "delta", "content").to_s
          if j["usage"]
            input = j.dig("usage", "prompt_tokens")
            output = j.dig("usage", "completion_tokens")
          end
        end
      end
      [text, model, input, output]
    else
      j = JSON.parse(body)
      if api == "anthropic"
        [j["content"].select { |b| b["type"] == "text" }.map { |b| b["text"] }.join, j["model"],
         j.dig("usage", "input_tokens"), j.dig("usage", "output_tokens")]
      else
        [j.dig("choices", 0, "message", "content").to_s, j["model"],
         j.dig("usage", "prompt_tokens"), j.dig("usage", "completion_tokens")]
      end
    end
  end

  # The class each recorded error must map to, read off the recordings by hand.
  def self.expected_error(file, status)
    case [File.basename(file), status]
    in [/error_handling|invalid_api_keys/, 401] then LlmFailover::UnauthorizedError
    in [/real_error_scenarios/, 400] then LlmFailover::ContextLengthExceededError
    in [/real_error_scenarios/, 429] then LlmFailover::RateLimitError
    end
  end

  let(:engine) { LlmFailover::Engine.new }
  let(:fp) { start_fake_provider }

  files = Dir[File.join(FIXTURE_DIR, "*.json")].sort
  it "has recordings to check" do
    expect(files.size).to be > 100
  end

  files.each do |file|
    JSON.parse(File.read(file))["interactions"].each_with_index do |interaction, index|
      request = interaction["request"]
      response = interaction["response"]
      api = request["api"]
      streamed = JSON.parse(request["body"])["stream"] == true

      it "#{File.basename(file, '.json')} ##{index} (#{api}, #{response['status']}#{', streamed' if streamed})" do
        fp.enqueue({ fixture: file, interaction: index })
        listener = EngineHelpers::RecordingListener.new
        target = engine_target(fp, api: api.to_sym, model: "requested-model")
        result = engine.run(engine_request(target, stream: streamed), listener)

        if (200..299).cover?(response["status"])
          text, model, input, output = self.class.expected_answer(api, response["body"], streamed)
          expect(result).to have_attributes(status: :ok, content: text, model: model || "requested-model",
                                            input_tokens: input, output_tokens: output)
          expect(listener.chunks.join).to eq(text) if streamed
        else
          expect(result).to have_attributes(status: :failed, http_status: response["status"],
                                            error_class: self.class.expected_error(file, response["status"]))
          expect(result[:body]).to eq(response["body"])
        end
        expect(listener.attempts.size).to eq(1)
      end
    end
  end
end
