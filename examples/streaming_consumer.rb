# frozen_string_literal: true

# Streaming consumers that handle reset?. When the primary fails after some words
# were shown, the gem fails over and the backup answers from scratch; before the
# backup's first word the block gets a chunk with reset? true. A consumer must then
# take back what it showed, or the reader sees two answers glued together.
#
#   bundle exec ruby examples/streaming_consumer.rb
#
# Runs against two local FakeProviders: the primary cuts its stream after a few words.
require "io/console"
require "llm_failover"
require "llm_failover/testing"

# Prints to a terminal and erases the partial answer on reset. Where nothing can be
# erased (a pipe, a file, a log) it writes a marker line instead, so whatever reads
# the output can tell where the real answer starts.
class TerminalConsumer
  # @return [String] what the reader is meant to see now
  attr_reader :shown

  def initialize(io = $stdout)
    @io = io
    @shown = +""
  end

  def call(chunk)
    if chunk.reset?
      erase
    else
      @io.print(chunk.content)
      @io.flush
      @shown << chunk.content
    end
  end

  private

  def erase
    if @io.tty?
      # Back to the first row the answer used, then clear to the end of the screen.
      rows = rows_used(@shown)
      @io.print("\r#{"\e[#{rows}A" if rows.positive?}\e[J")
    else
      @io.print("\n[reset: the answer above is void; the backup answers below]\n")
    end
    @io.flush
    @shown = +""
  end

  # Newlines plus the terminal's own wraps (one column per character is close enough).
  def rows_used(text)
    width = terminal_width
    text.split("\n", -1).each_with_index.sum do |line, i|
      wraps = line.empty? ? 0 : (line.length - 1) / width
      wraps + (i.zero? ? 0 : 1)
    end
  end

  def terminal_width
    width = @io.winsize[1]
    width.positive? ? width : 80
  rescue SystemCallError
    80
  end
end

# Sends the answer to a browser as events (in Rails: ActionCable.server.broadcast).
# A reset becomes an event of its own; the client empties the message box on it.
class BroadcastConsumer
  attr_reader :events

  def initialize
    @events = []
  end

  def call(chunk)
    @events << (chunk.reset? ? { type: "reset" } : { type: "delta", text: chunk.content })
  end

  # What a client that applies the events in order ends up showing.
  def client_text
    @events.each_with_object(+"") do |event, text|
      event[:type] == "reset" ? text.clear : text << event[:text]
    end
  end
end

primary = LlmFailover::Testing::FakeProvider.start
backup = LlmFailover::Testing::FakeProvider.start
primary.default = { text: "Streaming lets the reader start early, but when the connection drops halfway",
                    cut_after: 7, chunk_delay: 0.03 }
backup.default = { text: "Streaming shows words as they come. If a provider fails mid-answer, " \
                         "the consumer erases the partial text and shows the backup's answer instead.",
                   chunk_delay: 0.03 }

LlmFailover.configure do |c|
  c.provider :openai, api: :openai, api_key: "fake-key", base_url: primary.base_url(:openai)
  c.provider :anthropic, api: :anthropic, api_key: "fake-key", base_url: backup.base_url(:anthropic)
end

terminal = TerminalConsumer.new($stdout)
browser = BroadcastConsumer.new
chat = LlmFailover.chat(model: "gpt-4o", provider: :openai,
                        backup_model: "claude-sonnet-4-6", backup_provider: :anthropic)
reply = chat.ask("Why stream answers?") do |chunk|
  terminal.call(chunk)
  browser.call(chunk)
end
puts
puts
by = LlmFailover::Target.label(reply.provider, reply.model)
puts "answered by #{by}, failover: #{reply.failover? ? 'yes' : 'no'}"
puts "terminal shows exactly the reply: #{terminal.shown == reply.content}"
puts "browser events: #{browser.events.count { |e| e[:type] == 'delta' }} deltas, " \
     "#{browser.events.count { |e| e[:type] == 'reset' }} reset"
puts "browser shows exactly the reply: #{browser.client_text == reply.content}"
puts "stored answer: #{chat.messages.last.content == reply.content ? 'the backup\'s alone' : 'MIXED'}"

[primary, backup].each(&:stop)
