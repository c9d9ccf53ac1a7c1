# frozen_string_literal: true

# Seeds the fuzz_wire corpus from the recorded traffic: every response body,
# every SSE event's data (alone, and as "event-name\ndata" the way the target
# reads a named event), every request body, and the error shapes of WIRE.md
# that no recording holds.
#
#   ruby fuzz/seed_wire.rb [fixtures_dir] [corpus_dir]

require "digest"
require "fileutils"
require "json"

root = File.expand_path("..", __dir__)
fixtures = ARGV[0] || File.join(root, "spec/fixtures/recorded")
corpus = ARGV[1] || File.join(root, "tmp/fuzz/corpus_wire")
FileUtils.mkdir_p(corpus)

seeds = []

# function_calling/: tool calls, whole and streamed in pieces; gemini/: Gemini and Vertex AI.
Dir[File.join(fixtures, "*.json"), File.join(fixtures, "function_calling", "*.json"),
    File.join(fixtures, "gemini", "*.json")].sort.each do |path|
  JSON.parse(File.read(path))["interactions"].each do |interaction|
    body = interaction.dig("response", "body").to_s
    seeds << body
    seeds << interaction.dig("request", "body").to_s
    next unless interaction.dig("response", "headers", "content-type").to_s.include?("event-stream")

    seeds << body[0, 4096]
    # Every event's data on a line of its own: the fuzz target's stream of events.
    seeds << body.scan(/^data: ?(.*)$/).flatten.join("\n")[0, 8192]
    body.split(/\r?\n\r?\n/).each do |event|
      name = event[/^event: ?(.*)$/, 1]
      data = event.scan(/^data: ?(.*)$/).flatten.join("\n")
      seeds << data
      seeds << "#{name}\n#{data}" if name
    end
  end
end

seeds.concat [
  '[{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}]',
  '{"error":{"message":"Insufficient credits","code":402}}',
  '{"error":{"message":"m","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}',
  '{"detail":[{"loc":["body","model"],"msg":"field required","type":"value_error.missing"}]}',
  '{"error":"model not found"}',
  '{"detail":{"message":"nested detail"}}',
  '{"message":"Too many requests"}',
  '{"object":"error","message":"bad","type":"BadRequestError","param":null,"code":400}',
  "error\n{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
  '{"choices":[{"index":0,"message":{"content":null,"tool_calls":[]},"finish_reason":"tool_calls"}]}',
  '{"choices":[{"delta":{"content":"caf\u00e9 \ud83d\ude0a \ud800"},"finish_reason":null}]}',
  "[DONE]",
  '{"promptFeedback":{"blockReason":"SAFETY"}}',
  '{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"SAFETY"}]}',
  '{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"m","details":[{"retryDelay":"1.5s"},{"reason":"R"}]}}',
  '{"embeddings":[{"values":[0.1,0.2]},{"values":[0.3,0.4]}]}',
  # fuzz_build_params reads the first 17 bytes as temperature, max_tokens, flags
  [0.7, 256, 7].pack("Eq<C") + "hello",
  [Float::NAN, -1, 5].pack("Eq<C"),
  [-0.0, 0, 4].pack("Eq<C"),
  "data: [DONE]\n",
  "{\"choices\":[{\"delta\":{\"content\":\"\xC0\xAF\xED\xA0\x80\xF4\x90\x80\x80\"}}]}".b
]

seeds.uniq.each do |seed|
  next if seed.empty?

  File.binwrite(File.join(corpus, Digest::SHA1.hexdigest(seed)), seed)
end
puts "#{seeds.uniq.size} seeds in #{corpus}"
