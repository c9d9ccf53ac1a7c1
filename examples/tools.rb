# frozen_string_literal: true

# A chat that acts: a tool the model calls, the loop that runs it and sends the result
# back, and a failover between two turns from the OpenAI protocol to the Anthropic one.
# The tool runs once; the backup finishes the loop with the primary's call and its
# result in its own protocol.
#
#   bundle exec ruby examples/tools.rb                        # two local FakeProviders
#   LLM_FAILOVER_LIVE=1 bundle exec ruby examples/tools.rb    # the real APIs, from
#                                                             # OPENAI_API_KEY and ANTHROPIC_API_KEY
require "llm_failover"

live = ENV["LLM_FAILOVER_LIVE"] == "1"
unless live
  require "llm_failover/testing"
  # strict_transcript: each refuses, as Anthropic does, a call sent without its result.
  openai = LlmFailover::Testing::FakeProvider.start(strict_transcript: true)
  anthropic = LlmFailover::Testing::FakeProvider.start(strict_transcript: true)
  openai.enqueue({ text: "Let me check.", tool_calls: [{ name: "weather", arguments: { "city" => "Paris" } }] },
                 { error: :overloaded }) # the primary dies on the next turn
  anthropic.enqueue({ text: "It is 21 °C in Paris." })
end

LlmFailover.configure do |c|
  c.provider :openai, api: :openai, api_key: live ? ENV.fetch("OPENAI_API_KEY") : "fake-key",
                      base_url: (openai.base_url(:openai) unless live)
  c.provider :anthropic, api: :anthropic, api_key: live ? ENV.fetch("ANTHROPIC_API_KEY") : "fake-key",
                         base_url: (anthropic.base_url(:anthropic) unless live)
  c.max_retries = 0 unless live
end

class Weather < LlmFailover::Tool
  description "Current weather for a city"
  param :city, type: :string, desc: "City name"
  param :unit, type: :string, enum: %w[c f], required: false

  class << self
    attr_accessor :runs
  end
  self.runs = 0

  def execute(city:, unit: "c")
    self.class.runs += 1
    { city: city, temp: 21, unit: unit } # a real tool would ask a weather service
  end
end

chat = LlmFailover.chat(model: "gpt-4o", provider: :openai,
                        backup_model: "claude-sonnet-4-6", backup_provider: :anthropic)
chat.with_tool(Weather)

reply = chat.ask("What is the weather in Paris?") do |chunk|
  if chunk.tool_call?
    puts "\n[calling #{chunk.tool_call.name} #{chunk.tool_call.arguments.to_json}]"
  elsif chunk.tool_result?
    puts "[#{chunk.tool_call.name} returned #{chunk.tool_call.content}]"
  elsif chunk.reset?
    puts "\n[reset]"
  else
    print chunk.content
  end
end
puts
puts "answered by #{LlmFailover::Target.label(reply.provider, reply.model)}, failover: #{reply.failover? ? 'yes' : 'no'}"
reply.tool_calls.each do |call|
  puts "tool call #{call.name} #{call.arguments.to_json} asked by #{call.provider}: #{call.status}"
end
puts "the tool ran #{Weather.runs} time(s); #{reply.attempts.size} attempts under request #{reply.request_id[0, 8]}..."
puts "stored: #{chat.messages.map(&:role).join(', ')}"
unless live
  puts "openai saw #{openai.request_count} requests, anthropic #{anthropic.request_count}"
  openai.stop
  anthropic.stop
end
