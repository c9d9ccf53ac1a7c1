# frozen_string_literal: true

require_relative "attachment"
require_relative "download"
require "llm_failover/llm_failover" # Engine::Attachment

module LlmFailover
  class Attachment
    # What Chat#ask's with: becomes before anything is stored: each file checked, as
    # the input it is, against the chat's targets by the core's rule of what a target
    # takes (lf_wire_attachment_refusal over ProviderConfig#attachments: the types,
    # the limits per file and per message). Which target a call sends a message's
    # attachments to is the core's choice when the call runs
    # (lf_wire_attachments_refusal): a target that cannot take them is left out with
    # a skipped record, and AttachmentRefusedError says when none of them can.
    # @api private
    module Selection
      module_function

      # The canonical attachments of +with+ (one source or an Array of them), checked
      # against the chat's targets: every file fits at least one of them, and URL
      # attachments that a target taking them takes no URL for are downloaded here,
      # once.
      # @param targets [Array<Target>]
      # @return [Array<Attachment>] frozen
      # @raise [ArgumentError] naming the file and the limit or type no target takes
      def prepare(with, targets:, allow_private:)
        sources = with.is_a?(Array) ? with : [with]
        return [].freeze if sources.empty?

        check_count(sources.size, targets) # before any file is read
        max_bytes = targets.map { |t| t.provider.attachments[:max_bytes] }.max
        attachments = sources.map { |s| Attachment.from(s, max_bytes: max_bytes) }
        attachments.each { |a| check_taken(a, targets) }
        if attachments.any? { |a| a.data.nil? }
          attachments = download(attachments, targets, max_bytes, allow_private)
          attachments.each { |a| check_taken(a, targets) } # the sizes are known now
        end
        attachments.freeze
      end

      # @raise [ArgumentError] no target takes +count+ files with one message: the
      #   first target's reason
      def check_count(count, targets)
        reasons = targets.map do |t|
          Attachment.__send__(:__count_refusal, t.engine, t.label, count)
        end
        raise ArgumentError, reasons.first.last if reasons.all?
      end

      # @raise [ArgumentError] no target of the chat takes +attachment+: the first
      #   target's reason. A URL attachment a target needs the bytes of is taken: it is
      #   downloaded next, and checked again.
      def check_taken(attachment, targets)
        refusals = targets.map { |t| refusal(t, attachment) }
        return if refusals.any? { |r| r.nil? || r.first == :url }

        raise ArgumentError, refusals.first.last
      end

      # The core's rule of what +target+ takes (lf_wire_attachment_refusal).
      # @return [Array(Symbol, String), nil] nil when it takes +attachment+, else why
      #   (:kind, :url: the bytes are needed, :size) and the message naming the file,
      #   the target and the limit
      def refusal(target, attachment)
        fields = [attachment.mime_type, attachment.name, attachment.base64, attachment.url]
        Attachment.__send__(:__refusal, target.engine, target.label, fields)
      end

      # The URL attachments a target that takes them needs the bytes of, downloaded.
      def download(attachments, targets, max_bytes, allow_private)
        fetcher = nil
        attachments.map do |a|
          next a unless a.data.nil? && targets.any? { |t| refusal(t, a)&.first == :url }

          fetcher ||= Download.new(max_bytes: max_bytes, allow_private: allow_private)
          fetcher.call(a)
        end
      end

      # A stored message's attachments in canonical form: the store's reading
      # (#attachments_of: an ActiveRecord row's column or ActiveStorage blobs), else the
      # message's own (MemoryStore's are canonical already).
      # @return [Array<Attachment>]
      def stored(store, message)
        return store.attachments_of(message) if store.respond_to?(:attachments_of)
        return [] unless message.respond_to?(:attachments)

        list = message.attachments
        return list if list.is_a?(Array) && list.all?(Attachment)

        list.map { |a| Attachment.from(a) }
      end

      # The engine request's attachments: one Array of Engine::Attachments per message
      # sent (stored messages in the order sent), nil when none has any.
      def engine_list(attachments_per_message)
        return nil if attachments_per_message.all?(&:empty?)

        attachments_per_message.map do |attachments|
          attachments.map do |a|
            Engine::Attachment.new(mime_type: a.mime_type, filename: a.filename, base64: a.base64, url: a.url)
          end
        end
      end
    end
  end
end
