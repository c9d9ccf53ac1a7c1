# frozen_string_literal: true

require_relative "attachment"
require_relative "download"

module LlmFailover
  class Attachment
    # What Chat#ask's with: becomes before anything is stored, and which of a call's
    # targets can be sent a message's attachments (ProviderConfig#attachments: the
    # types it takes, its limits per file and per message).
    # @api private
    module Selection
      module_function

      # The canonical attachments of +with+ (one source or an Array of them), checked
      # against the chat's targets: every file fits at least one of them, and URL
      # attachments a target takes no URL for are downloaded here, once.
      # @param targets [Array<Target>]
      # @return [Array<Attachment>] frozen
      # @raise [ArgumentError] naming the file and the limit or type no target takes
      def prepare(with, targets:, allow_private:)
        sources = with.is_a?(Array) ? with : [with]
        return [].freeze if sources.empty?

        caps = targets.map { |t| t.provider.attachments }
        max_count = caps.map { |c| c[:max_count] }.max
        if sources.size > max_count
          raise ArgumentError, "#{sources.size} attachments, over the limit of #{max_count} per message"
        end

        max_bytes = caps.map { |c| c[:max_bytes] }.max
        attachments = sources.map { |s| Attachment.from(s, max_bytes: max_bytes) }
        usable = usable(targets, attachments)
        attachments = download(attachments, usable, max_bytes, allow_private) if attachments.any? { |a| a.data.nil? }
        attachments.freeze
      end

      # The targets that take every one of +attachments+, in order.
      # @raise [ArgumentError] none does: the first target's reason
      def usable(targets, attachments)
        return targets if attachments.empty?

        reasons = targets.map { |t| refusal(t, attachments) }
        kept = targets.each_index.reject { |i| reasons[i] }.map { |i| targets[i] }
        raise ArgumentError, reasons.compact.first if kept.empty?

        kept
      end

      # Why +target+ cannot be sent +attachments+, nil when it can.
      def refusal(target, attachments)
        caps = target.provider.attachments
        label = target.label
        if attachments.size > caps[:max_count]
          return "#{attachments.size} attachments, over #{label}'s limit of #{caps[:max_count]} per message"
        end

        attachments.each do |a|
          return "attachment #{a.name.inspect}: #{label} takes no images (images: false)" if a.kind == :image && !caps[:images]
          if a.kind == :document && !caps[:documents]
            return "attachment #{a.name.inspect}: #{label} takes no PDFs (documents: false)"
          end
          if a.size && a.size > caps[:max_bytes]
            return "attachment #{a.name.inspect} is #{a.size} bytes, over #{label}'s limit of #{caps[:max_bytes]} bytes"
          end
        end
        nil
      end

      # Whether +target+ is sent the bytes of a URL attachment (the wire layer's rule:
      # OpenAI file parts take no URL).
      def needs_bytes?(target, attachment)
        !target.provider.attachments[:urls] || (target.provider.api == :openai && attachment.kind == :document)
      end

      def download(attachments, targets, max_bytes, allow_private)
        fetcher = nil
        attachments.map do |a|
          next a unless a.data.nil? && targets.any? { |t| needs_bytes?(t, a) }

          fetcher ||= Download.new(max_bytes: max_bytes, allow_private: allow_private)
          fetcher.call(a)
        end
      end

      # The engine request's :attachments of +messages+ (stored messages in the order
      # sent): [index, mime type, filename, base64, url] each.
      def engine_list(attachments_per_message)
        list = []
        attachments_per_message.each_with_index do |attachments, i|
          attachments.each { |a| list << [i, a.mime_type, a.filename, a.base64, a.url] }
        end
        list
      end
    end
  end
end
