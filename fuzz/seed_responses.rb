# frozen_string_literal: true

# Seeds the fuzz_responses corpus from the recorded Responses traffic: every
# response body, every event's data (alone, as "event-name\ndata", and all of a
# stream's on lines of their own), every request body, each recorded reasoning
# state as a response would hand it back, and the failures no recording holds.
#
#   ruby fuzz/seed_responses.rb [fixtures_dir] [corpus_dir]

require "digest"
require "fileutils"
require "json"

root = File.expand_path("..", __dir__)
fixtures = ARGV[0] || File.join(root, "spec/fixtures/recorded")
corpus = ARGV[1] || File.join(root, "tmp/fuzz/corpus_responses")
FileUtils.mkdir_p(corpus)

seeds = []
Dir[File.join(fixtures, "responses", "*.json")].sort.each do |path|
  JSON.parse(File.read(path))["interactions"].each do |interaction|
    body = interaction.dig("response", "body").to_s
    request = interaction.dig("request", "body").to_s
    seeds << body << request
    reasoning = JSON.parse(request)["input"].to_a.select { |item| item["type"] == "reasoning" }
    seeds << JSON.generate(reasoning) unless reasoning.empty?
    next unless interaction.dig("response", "headers", "content-type").to_s.include?("event-stream")

    seeds << body.scan(/^data: ?(.*)$/).flatten.join("\n")
    body.split(/\r?\n\r?\n/).each do |event|
      name = event[/^event: ?(.*)$/, 1]
      data = event.scan(/^data: ?(.*)$/).flatten.join("\n")
      seeds << data
      seeds << "#{name}\n#{data}" if name
    end
  end
end

seeds.concat [
  '{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"m"}}}',
  '{"type":"error","code":"rate_limit_exceeded","message":"slow","param":null,"sequence_number":2}',
  '{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}',
  '{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}',
  '{"status":"failed","output":[],"error":{"code":"invalid_prompt","message":"Your input exceeds the context window"}}',
  '[{"type":"reasoning","summary":[{"type":"summary_text","text":"caf\u00e9"}],"encrypted_content":"gAAAA"}]',
  '[{"type":"reasoning","encrypted_content":"x"},{}]',
  "{\"type\":\"response.output_text.delta\",\"delta\":\"\xC0\xAF\xED\xA0\x80\"}".b
]

seeds.uniq.each do |seed|
  next if seed.empty?

  File.binwrite(File.join(corpus, Digest::SHA1.hexdigest(seed)), seed)
end
puts "#{seeds.uniq.size} seeds in #{corpus}"
