# frozen_string_literal: true

# A user's own store, written against the documented store interface only.
class SpecListStore
  Row = Struct.new(:role, :content, :model, :provider, :status, :input_tokens, :output_tokens, keyword_init: true)

  attr_reader :log

  def initialize
    @rows = []
    @log = []
  end

  def messages = @rows.dup
  def conversation = @rows.reject { |m| m.role == "assistant" && m.status != "complete" }
  def add_user(content) = add("user", content)
  def add_system(content) = add("system", content)

  def replace_system(content)
    @rows.reject! { |m| m.role == "system" }
    add("system", content)
  end

  def start_assistant(model:, provider:)
    @log << [:start, provider]
    add("assistant", +"", status: "streaming", model: model, provider: provider)
  end

  def append_assistant(message, text)
    @log << [:append, text]
    message.content += text
  end

  def reset_assistant(message, model:, provider:)
    @log << [:reset, provider]
    message.content = +""
    message.model = model
    message.provider = provider
  end

  def finish_assistant(message, content:, model:, provider:, input_tokens:, output_tokens:)
    @log << [:finish, provider]
    message.content = content
    message.model = model
    message.provider = provider
    message.input_tokens = input_tokens
    message.output_tokens = output_tokens
    message.status = "complete"
  end

  def fail_assistant(message, model: nil, provider: nil)
    @log << [:fail]
    message.status = "failed"
    message.model = model if model
    message.provider = provider if provider
  end

  private

  def add(role, content, status: "complete", model: nil, provider: nil)
    Row.new(role: role, content: content, status: status, model: model, provider: provider).tap { |m| @rows << m }
  end
end
